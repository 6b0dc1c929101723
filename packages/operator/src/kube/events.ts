/**
 * The Kubernetes store's Event recorder: Events on Proxies (`kubectl
 * describe proxy` shows them), sent in the background a few at a time from
 * a bounded queue, so they never hold up the reconciles' own requests; past
 * the bound, and at close, Events are dropped with a warning, as client-go's
 * recorder does. A failure is logged, never thrown.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '@proxy-op/contract';
import { API_VERSION } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { messageOf } from '../runtime/message.js';
import type { EventType } from '../store/proxies.js';
import type { KubeClient } from './client.js';

/** What the recorder is built with. */
export interface EventRecorderOptions {
  readonly client: KubeClient;
  readonly logger: Logger;
  /** Who writes the Events (`reportingInstance`): the Pod or host name. */
  readonly identity: string;
  readonly now: () => Date;
}

/** What an Event is about: a Proxy or a ProxyPool, as the API server has it. */
export interface EventSubject {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion: string;
  };
}

/** A new Event's name: the object's name and a random suffix, as client-go names them. */
function eventName(name: string): string {
  return `${name.slice(0, 200)}.${randomBytes(8).toString('hex')}`;
}

/** Records Events on Proxies and ProxyPools through a bounded queue. */
export class EventRecorder {
  readonly #client: KubeClient;
  readonly #log: Logger;
  readonly #identity: string;
  readonly #now: () => Date;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #queue: Array<() => Promise<void>> = [];

  constructor(opts: EventRecorderOptions) {
    this.#client = opts.client;
    this.#log = opts.logger;
    this.#identity = opts.identity;
    this.#now = opts.now;
  }

  /**
   * Queues an Event on `o`, a Proxy (or a ProxyPool, with `kind`) whose key
   * is `key`; drops it when the queue is full.
   */
  record(
    key: string,
    o: EventSubject,
    type: EventType,
    reason: string,
    message: string,
    kind: 'Proxy' | 'ProxyPool' = 'Proxy',
  ): void {
    const about = kind === 'Proxy' ? { proxy: key } : { pool: key };
    if (this.#queue.length >= DEFAULTS.eventQueueSize) {
      this.#log.warn({ ...about, reason }, 'too many Events waiting; this one is dropped');
      return;
    }
    const time = `${this.#now().toISOString().slice(0, 19)}Z`;
    const md = o.metadata;
    this.#queue.push(() =>
      this.#client
        .request<unknown>({
          operation: `recording the ${reason} Event on ${kind} ${key}`,
          method: 'POST',
          path: `/api/v1/namespaces/${md.namespace}/events`,
          body: {
            apiVersion: 'v1',
            kind: 'Event',
            metadata: { name: eventName(md.name), namespace: md.namespace },
            involvedObject: {
              apiVersion: API_VERSION,
              kind,
              name: md.name,
              namespace: md.namespace,
              uid: md.uid,
              resourceVersion: md.resourceVersion,
            },
            reason,
            message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
            type,
            source: { component: 'proxy-op' },
            reportingComponent: 'proxy-op',
            reportingInstance: this.#identity,
            firstTimestamp: time,
            lastTimestamp: time,
            count: 1,
          },
        })
        .then(
          () => {},
          (err: unknown) => {
            this.#log.warn({ ...about, reason, err: messageOf(err) }, 'recording an Event failed');
          },
        ),
    );
    this.#send();
  }

  /** Sends queued Events while fewer than `DEFAULTS.eventsInFlight` are in flight. */
  #send(): void {
    while (this.#inFlight.size < DEFAULTS.eventsInFlight) {
      const send = this.#queue.shift();
      if (send === undefined) break;
      const p = send().finally(() => {
        this.#inFlight.delete(p);
        this.#send();
      });
      this.#inFlight.add(p);
    }
  }

  /** Drops the Events still queued (with a warning) and waits for those in flight. */
  async close(): Promise<void> {
    if (this.#queue.length > 0) {
      this.#log.warn({ events: this.#queue.length }, 'stopping; Events not yet sent are dropped');
      this.#queue.length = 0;
    }
    await Promise.allSettled([...this.#inFlight]);
  }
}
