/**
 * The Kubernetes store: a {@link ProxyStore} over the Kubernetes API, made of
 * three parts as controller-runtime makes a controller's: the cache (a
 * `@kubernetes/client-node` informer of Proxies, with read-your-writes), the
 * writes (status through the status subresource, the finalizer through
 * conditional merge patches, each retried on top of a fresh read after a
 * conflict, so a concurrent edit is never overwritten) and the Event
 * recorder; beside them, ProviderHealth as cluster-scoped objects.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import type { ProviderHealth, ProxyObject, ProxyStatus } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import type { EventType, ProxyStore } from '../store/proxies.js';
import { ProxyCache } from './cache.js';
import type { KubeClient } from './client.js';
import { EventRecorder, type EventSubject } from './events.js';
import { HealthStore } from './health.js';
import type { RawProxy } from './raw.js';
import { ProxyWriter } from './writes.js';

/** Options of {@link KubeStore.start}. */
export interface KubeStoreOptions {
  /** The client the store lists, watches and writes with. */
  readonly client: KubeClient;
  /** Watch and write Proxies of this namespace only (default: every namespace). */
  readonly namespace?: string | undefined;
  /** Where the store logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** Who writes the Events (`reportingInstance`): the Pod or host name. */
  readonly identity?: string | undefined;
  /** Aborts the start (listing ProviderHealth and the Proxies, with their retries); close() ends the rest. */
  readonly signal?: AbortSignal | undefined;
  /** The clock Events are stamped with; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
}

/**
 * A {@link ProxyStore} over the Kubernetes API. {@link KubeStore.start}
 * resolves once the informer has listed every Proxy; from then on the watch
 * keeps the cache current (resuming after a dropped watch, listing again
 * after a 410) and every change a user makes queues the Proxy.
 */
export class KubeStore implements ProxyStore {
  readonly #abort = new AbortController();
  readonly #cache: ProxyCache;
  readonly #writes: ProxyWriter;
  readonly #events: EventRecorder;
  readonly #health: HealthStore;
  #closed = false;

  private constructor(opts: KubeStoreOptions) {
    const client = opts.client;
    const logger = opts.logger ?? silentLogger;
    const signal = this.#abort.signal;
    this.#events = new EventRecorder({
      client,
      logger,
      identity: opts.identity ?? DEFAULTS.identity,
      now: opts.now ?? (() => new Date()),
    });
    this.#cache = new ProxyCache({
      client,
      namespace: opts.namespace,
      logger,
      onInvalid: (key, o, problems) => {
        if (!this.#closed) {
          this.#events.record(key, o, 'Warning', 'InvalidSpec', problems.join('; '));
        }
      },
    });
    this.#writes = new ProxyWriter({ client, cache: this.#cache, logger, signal });
    this.#health = new HealthStore({ client, logger, signal });
  }

  /**
   * Lists the ProviderHealth objects, starts the Proxy informer and resolves
   * once it has listed every Proxy. A failing list is retried with backoff
   * (each failure logged with the operation and the API server's answer);
   * aborting `opts.signal` rejects.
   */
  static async start(opts: KubeStoreOptions): Promise<KubeStore> {
    const store = new KubeStore(opts);
    try {
      // The caller's signal bounds the start only; afterwards close() ends the store.
      const signal =
        opts.signal === undefined
          ? store.#abort.signal
          : AbortSignal.any([opts.signal, store.#abort.signal]);
      await store.#health.load(signal);
      await store.#cache.start(signal);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /** How many full lists of Proxies the informer made (1 unless a watch expired). */
  get lists(): number {
    return this.#cache.lists;
  }

  /** True once the informer has listed the Proxies. */
  get synced(): boolean {
    return this.#cache.synced;
  }

  /** {@inheritDoc ProxyStore.get} */
  get(key: string): ProxyObject | undefined {
    return this.#cache.get(key);
  }

  /** {@inheritDoc ProxyStore.list} */
  list(): ProxyObject[] {
    return this.#cache.list();
  }

  /** {@inheritDoc ProxyStore.watch} */
  watch(listener: (key: string) => void): () => void {
    return this.#cache.watch(listener);
  }

  /** Proxies that cannot be reconciled, each `namespace/name: path: message`. */
  problems(): string[] {
    return this.#cache.problems();
  }

  /** UIDs of Proxies the store holds but cannot reconcile (an invalid spec): GC leaves their instances alone. */
  protectedUids(): ReadonlySet<string> {
    return this.#cache.protectedUids();
  }

  /** Takes a Proxy the operator created (a pool's) into the cache at once (read-your-writes). */
  noteCreated(o: RawProxy): void {
    this.#cache.created(o);
  }

  /** {@inheritDoc ProxyStore.updateStatus} */
  updateStatus(key: string, status: ProxyStatus): Promise<void> {
    return this.#writes.updateStatus(key, status);
  }

  /** {@inheritDoc ProxyStore.addFinalizer} */
  addFinalizer(key: string, finalizer: string): Promise<void> {
    return this.#writes.addFinalizer(key, finalizer);
  }

  /** {@inheritDoc ProxyStore.removeFinalizer} */
  removeFinalizer(key: string, finalizer: string): Promise<void> {
    return this.#writes.removeFinalizer(key, finalizer);
  }

  /**
   * Records an Event on the Proxy (`kubectl describe proxy` shows it). It is
   * sent in the background; a failure is logged, never thrown.
   */
  recordEvent(key: string, type: EventType, reason: string, message: string): void {
    const o = this.#cache.raw(key);
    if (o === undefined || this.#closed) return;
    this.#events.record(key, o, type, reason, message);
  }

  /** Records an Event on the ProxyPool `o` (`kubectl describe proxypool` shows it), as {@link KubeStore.recordEvent}. */
  recordPoolEvent(
    key: string,
    o: EventSubject,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    if (this.#closed) return;
    this.#events.record(key, o, type, reason, message, 'ProxyPool');
  }

  /** {@inheritDoc ProxyStore.writeHealth} */
  writeHealth(health: ProviderHealth): Promise<void> {
    return this.#health.write(health);
  }

  /** {@inheritDoc ProxyStore.deleteHealth} */
  deleteHealth(name: string): Promise<void> {
    return this.#health.delete(name);
  }

  /** {@inheritDoc ProxyStore.listHealth} */
  listHealth(): ProviderHealth[] {
    return this.#health.list();
  }

  /** Stops the informer, waits for Events in flight, and aborts whatever else is pending. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#cache.stop();
    // Events still queued are dropped; those in flight are waited for.
    await this.#events.close();
    this.#abort.abort(new Error('the store is closed'));
  }
}
