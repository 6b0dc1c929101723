/**
 * The informer: one collection of the Kubernetes API kept in memory, as
 * client-go's reflector keeps it. A paged list, then a watch resumed from
 * the last resourceVersion seen (bookmarks included) each time the server
 * ends it, a new list only when the server says that version is gone (410),
 * a doubling delay after a failure, each failure logged with the operation
 * (and, for a 403, the RBAC rule that grants it). The handlers hear of each
 * object added, changed and deleted; a copy older than the one held is
 * never taken.
 *
 * @module
 */
import { randomInt } from 'node:crypto';
import type { Logger } from '@proxy-op/contract';
import { DEFAULTS } from '../defaults.js';
import { messageOf } from '../runtime/message.js';
import { sleep } from '../runtime/sleep.js';
import { isStatus, type KubeClient, type WatchEvent } from './client.js';
import { newer } from './raw.js';

/** `a` is a version before `b` (or the same); an opaque version that differs is taken as newer. */
function older(a: string, b: string): boolean {
  return a === b || newer(b, a);
}

/** What the informer needs of an object. */
export interface InformedObject {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly resourceVersion: string;
  };
}

/** Told of every change the informer takes in. */
export interface InformerHandlers<T> {
  /** An object the informer did not hold. */
  added(o: T): void;
  /** A newer copy of an object it held (`old`). */
  updated(o: T, old: T): void;
  /** An object gone (its last copy). */
  deleted(o: T): void;
}

/** What an informer is built with. */
export interface InformerOptions<T extends InformedObject> {
  readonly client: KubeClient;
  /** The collection's path (`/apis/proxy-op.io/v1alpha1/proxies`, or a namespace's). */
  readonly path: string;
  /** What is listed, for messages: `Proxies`. */
  readonly what: string;
  /** The kind, for messages: `Proxy` (`the Proxy informer failed`). */
  readonly kind: string;
  readonly logger: Logger;
  readonly handlers: InformerHandlers<T>;
  /** Applied to each object as it comes in (dropping what is never read). */
  readonly transform?: ((o: T) => T) | undefined;
}

/** `namespace/name`, or `name` for a cluster-scoped object: the key of an object in the informer. */
export function objectKey(o: InformedObject): string {
  const ns = o.metadata.namespace;
  return ns === undefined || ns === '' ? o.metadata.name : `${ns}/${o.metadata.name}`;
}

/** A watch that ended this soon after it opened, having carried nothing, counts as a failure. */
const SHORT_WATCH_MS = 1000;

/** One collection, listed and watched; see the module comment. */
export class Informer<T extends InformedObject> {
  readonly #o: InformerOptions<T>;
  readonly #objects = new Map<string, T>();
  readonly #stop = new AbortController();
  #resourceVersion: string | undefined;
  #lists = 0;
  #synced: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(o: InformerOptions<T>) {
    this.#o = o;
  }

  /** How many full lists were made (1 unless the watch history expired). */
  get lists(): number {
    return this.#lists;
  }

  /** True once the first list is in. */
  get synced(): boolean {
    return this.#lists > 0;
  }

  /** The object of `key` (`namespace/name`, or `name`). */
  get(key: string): T | undefined {
    return this.#objects.get(key);
  }

  /** Every object held. */
  list(): T[] {
    return [...this.#objects.values()];
  }

  /**
   * Starts listing and watching; resolves once the first list is in (a
   * failing list is retried with the delay, each failure logged), rejects
   * when `signal` aborts first.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#running !== undefined) throw new Error('Informer: already started');
    const synced = new Promise<void>((resolve) => {
      this.#synced = resolve;
    });
    this.#running = this.#run();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      synced.then(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  /** Stops watching; resolves once the informer's loop has ended. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error('the informer is stopped'));
    await this.#running;
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    let delay: number = DEFAULTS.informerRestartBaseMs;
    // A version gone (410) is listed again at once; the same right after a list waits.
    let listedNow = false;
    while (!stop.aborted) {
      try {
        if (this.#resourceVersion === undefined) {
          await this.#list(stop);
          listedNow = true;
        }
        const opened = performance.now();
        const outcome = await this.#watch(stop);
        const expiredAgain = outcome === 'expired' && listedNow;
        listedNow = false;
        if (outcome === 'expired' && !expiredAgain) continue;
        if (
          outcome === 'carried' ||
          (outcome === 'quiet' && performance.now() - opened >= SHORT_WATCH_MS)
        ) {
          delay = DEFAULTS.informerRestartBaseMs;
          continue;
        }
      } catch (err) {
        if (stop.aborted) break;
        if (isStatus(err, 410) && !listedNow) {
          // The version asked for is gone: list again, at once.
          this.#resourceVersion = undefined;
          continue;
        }
        if (isStatus(err, 410)) this.#resourceVersion = undefined;
        listedNow = false;
        this.#o.logger.error(
          { err: messageOf(err), retryInMs: delay },
          `the ${this.#o.kind} informer failed`,
        );
      }
      try {
        await sleep(delay, stop);
      } catch {
        break;
      }
      delay = Math.min(delay * 2, DEFAULTS.informerRestartMaxMs);
    }
  }

  /** Lists the collection, page by page, and takes it in as what exists now. */
  async #list(signal: AbortSignal): Promise<void> {
    const items: T[] = [];
    let resourceVersion = '';
    let cont: string | undefined;
    do {
      const page: { metadata?: { resourceVersion?: string; continue?: string }; items: T[] } =
        await this.#o.client.request({
          operation: `listing ${this.#o.what}`,
          method: 'GET',
          path: this.#o.path,
          query: { limit: String(DEFAULTS.listPageSize), ...(cont ? { continue: cont } : {}) },
          signal,
        });
      if (resourceVersion === '') resourceVersion = page.metadata?.resourceVersion ?? '';
      for (const item of page.items) items.push(this.#o.transform?.(item) ?? item);
      cont = page.metadata?.continue;
    } while (cont);
    const seen = new Set<string>();
    for (const o of items) {
      const key = objectKey(o);
      seen.add(key);
      const old = this.#objects.get(key);
      this.#objects.set(key, o);
      if (old === undefined) this.#o.handlers.added(o);
      else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) {
        this.#o.handlers.updated(o, old);
      }
    }
    for (const [key, old] of this.#objects) {
      if (seen.has(key)) continue;
      this.#objects.delete(key);
      this.#o.handlers.deleted(old);
    }
    this.#resourceVersion = resourceVersion;
    this.#lists++;
    this.#o.logger.info(
      { [this.#o.what.toLowerCase()]: items.length, resourceVersion, lists: this.#lists },
      `listed the ${this.#o.what}`,
    );
    this.#synced?.();
  }

  /**
   * One watch from the version held, until the server ends it (its
   * timeout, chosen at random between 5 and 10 minutes as client-go does);
   * resolves with how it went: `expired` (410: list again), `carried`
   * (events came), `quiet` (none came).
   */
  async #watch(signal: AbortSignal): Promise<'expired' | 'carried' | 'quiet'> {
    const timeoutSeconds = randomInt(300, 600);
    let carried = false;
    let expired = false;
    let failure: string | undefined;
    await this.#o.client.watch(
      {
        operation: `watching ${this.#o.what}`,
        path: this.#o.path,
        query: {
          resourceVersion: this.#resourceVersion ?? '',
          allowWatchBookmarks: 'true',
          timeoutSeconds: String(timeoutSeconds),
        },
        // The server ends the watch at its timeout; a silent connection past it is dead.
        idleMs: (timeoutSeconds + 30) * 1000,
        signal,
      },
      (event) => {
        carried = true;
        if (event.type === 'ERROR') {
          if (event.object.code === 410) expired = true;
          else failure = JSON.stringify(event.object);
          return;
        }
        this.#event(event);
      },
    );
    if (expired) {
      this.#resourceVersion = undefined;
      return 'expired';
    }
    if (failure !== undefined) throw new Error(`watching ${this.#o.what}: ${failure}`);
    return carried ? 'carried' : 'quiet';
  }

  /** One event of the watch, taken in. */
  #event(event: WatchEvent): void {
    const rv = event.object.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (rv !== undefined) this.#resourceVersion = rv;
      return;
    }
    const raw = event.object as unknown as T;
    const o = this.#o.transform?.(raw) ?? raw;
    const key = objectKey(o);
    const old = this.#objects.get(key);
    if (event.type === 'DELETED') {
      if (old !== undefined) {
        this.#objects.delete(key);
        this.#o.handlers.deleted(o);
      }
    } else if (old === undefined) {
      this.#objects.set(key, o);
      this.#o.handlers.added(o);
    } else if (!older(o.metadata.resourceVersion, old.metadata.resourceVersion)) {
      this.#objects.set(key, o);
      this.#o.handlers.updated(o, old);
    }
    if (rv !== undefined) this.#resourceVersion = rv;
  }
}
