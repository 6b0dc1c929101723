/**
 * The Kubernetes store: Proxies from a `@kubernetes/client-node` informer
 * (list, then watch; the cache is what reconciles and GC read), status
 * written through the status subresource, the finalizer through optimistic
 * merge patches, ProviderHealth as cluster-scoped objects, and Events on the
 * Proxies. A write that conflicts re-reads the object and tries again on top
 * of what it read, so a concurrent edit is never overwritten.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { KubernetesListObject, KubernetesObject, ListWatch } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '@proxy-op/contract';
import {
  API_VERSION,
  formatProblems,
  GROUP,
  type ProviderHealth,
  type ProxyObject,
  type ProxyStatus,
  VERSION,
  validateProxySpec,
} from '../schema.js';
import { type EventType, type ProxyStore, proxyKey } from '../store.js';
import { isStatus, KubeApiError, type KubeClient } from './client.js';
import { sleep } from './sleep.js';

/**
 * A Proxy as the API server serves it: plain JSON, so times are strings
 * (client-node's `KubernetesObject` types them as dates, which only its
 * typed APIs' serializer makes them).
 */
interface RawProxy {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    generation?: number;
    creationTimestamp: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: unknown;
  };
  spec?: unknown;
  status?: ProxyStatus;
}

/** A ProviderHealth as the API server serves it. */
interface RawHealth {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string> };
  status?: ProviderHealth['status'];
}

/** Options of {@link KubeStore.start}. */
export interface KubeStoreOptions {
  readonly client: KubeClient;
  /** Watch and write Proxies of this namespace only (default: every namespace). */
  readonly namespace?: string | undefined;
  readonly logger?: Logger | undefined;
  /** Who writes the Events (`reportingInstance`): the Pod or host name. */
  readonly identity?: string | undefined;
  /** Aborts the start (listing ProviderHealth and the Proxies, with their retries); close() ends the rest. */
  readonly signal?: AbortSignal | undefined;
  readonly now?: (() => Date) | undefined;
}

const PROXIES = 'proxies';
const HEALTH = 'providerhealths';
/** Writes that conflict are retried on top of a fresh read this many times. */
const CONFLICT_ATTEMPTS = 5;
/** The first delay before a failed list or watch is started again; doubles up to the max. */
const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 30_000;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** Events sent at once, and waiting at most. */
const EVENTS_IN_FLIGHT = 2;
const EVENT_QUEUE = 1000;

/** `a` is newer than `b` (resourceVersions are compared as integers where both are). */
function newer(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return false;
}

/**
 * Drops what the operator never reads from a cached object: managedFields
 * and kubectl's last-applied copy of the spec (client-go's informers do the
 * same with a transform). The object is changed in place, so the informer's
 * cache holds the lighter copy.
 */
function trim<T extends RawProxy | RawHealth>(o: T): T {
  const md = o.metadata as RawProxy['metadata'];
  if (md.managedFields !== undefined) delete md.managedFields;
  if (md.annotations?.[LAST_APPLIED] !== undefined) {
    delete md.annotations[LAST_APPLIED];
    if (Object.keys(md.annotations).length === 0) delete md.annotations;
  }
  return o;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A new Event's name: the object's name and a random suffix, as client-go names them. */
function eventName(name: string): string {
  return `${name.slice(0, 200)}.${randomBytes(8).toString('hex')}`;
}

/**
 * A {@link ProxyStore} over the Kubernetes API. {@link KubeStore.start}
 * resolves once the informer has listed every Proxy; from then on the watch
 * keeps the cache current (resuming after a dropped watch, listing again
 * after a 410) and every change a user makes queues the Proxy.
 */
export class KubeStore implements ProxyStore {
  readonly #client: KubeClient;
  readonly #namespace: string | undefined;
  readonly #log: Logger;
  readonly #identity: string;
  readonly #now: () => Date;
  readonly #listeners = new Set<(key: string) => void>();
  /** The objects the reconciler sees, made from the newest of the informer's copy and our own writes. */
  readonly #view = new Map<string, ProxyObject>();
  /** Answers to our own writes that the watch has not delivered yet (read-your-writes). */
  readonly #written = new Map<string, RawProxy>();
  /** resourceVersions our own writes produced, so their watch events queue nothing. */
  readonly #own = new Map<string, Set<string>>();
  /** Proxies whose spec does not validate: not reconciled, their UIDs protected from GC. */
  readonly #invalid = new Map<string, { uid: string; problems: string[] }>();
  readonly #health = new Map<string, RawHealth>();
  readonly #abort = new AbortController();
  readonly #events = new Set<Promise<void>>();
  readonly #eventQueue: Array<() => Promise<void>> = [];
  #eventsInFlight = 0;
  #informer: ListWatch<KubernetesObject> | undefined;
  #synced = false;
  #restartMs = RESTART_BASE_MS;
  #restartTimer: ReturnType<typeof setTimeout> | undefined;
  #lists = 0;
  #closed = false;

  private constructor(opts: KubeStoreOptions) {
    this.#client = opts.client;
    this.#namespace = opts.namespace;
    this.#log = opts.logger ?? silentLogger;
    this.#identity = opts.identity ?? 'proxy-op';
    this.#now = opts.now ?? (() => new Date());
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
      await store.#loadHealth(signal);
      await store.#startInformer(signal);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /** The collection path of Proxies (namespaced when scoped). */
  #proxiesPath(namespace?: string): string {
    const ns = namespace ?? this.#namespace;
    return ns === undefined
      ? `/apis/${GROUP}/${VERSION}/${PROXIES}`
      : `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PROXIES}`;
  }

  #proxyPath(key: string): string {
    const i = key.indexOf('/');
    return `${this.#proxiesPath(key.slice(0, i))}/${key.slice(i + 1)}`;
  }

  /** How many full lists of Proxies the informer made (1 unless a watch expired). */
  get lists(): number {
    return this.#lists;
  }

  /** True once the informer has listed the Proxies. */
  get synced(): boolean {
    return this.#synced;
  }

  async #loadHealth(signal: AbortSignal): Promise<void> {
    for (let delay = RESTART_BASE_MS; ; delay = Math.min(delay * 2, RESTART_MAX_MS)) {
      try {
        const list = await this.#client.request<{ items: RawHealth[] }>({
          operation: 'listing ProviderHealth',
          method: 'GET',
          path: `/apis/${GROUP}/${VERSION}/${HEALTH}`,
          signal,
        });
        for (const h of list.items) this.#health.set(h.metadata.name, trim(h));
        return;
      } catch (err) {
        signal.throwIfAborted();
        this.#log.error({ err: messageOf(err), retryInMs: delay }, 'listing ProviderHealth failed');
        await sleep(delay, signal);
      }
    }
  }

  async #startInformer(signal: AbortSignal): Promise<void> {
    const { ListWatch, Watch } = await import('@kubernetes/client-node');
    const path = this.#proxiesPath();
    const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
      const items: RawProxy[] = [];
      let resourceVersion = '';
      let cont: string | undefined;
      do {
        const page: {
          metadata?: { resourceVersion?: string; continue?: string };
          items: RawProxy[];
        } = await this.#client.request({
          operation: `listing Proxies${this.#namespace ? ` in ${this.#namespace}` : ''}`,
          method: 'GET',
          path,
          query: { limit: '500', ...(cont ? { continue: cont } : {}) },
          signal: this.#abort.signal,
        });
        if (resourceVersion === '') resourceVersion = page.metadata?.resourceVersion ?? '';
        for (const item of page.items) items.push(trim(item));
        cont = page.metadata?.continue;
      } while (cont);
      this.#lists++;
      this.#synced = true;
      this.#restartMs = RESTART_BASE_MS;
      this.#log.info(
        { proxies: items.length, resourceVersion, lists: this.#lists },
        'listed the Proxies',
      );
      return {
        apiVersion: 'v1',
        kind: 'List',
        metadata: { resourceVersion },
        items: items as unknown as KubernetesObject[],
      };
    };
    // Bookmarks move the informer's resourceVersion along while nothing changes, so a
    // watch started again after a quiet spell resumes instead of expiring into a new list.
    const informer = new ListWatch<KubernetesObject>(
      `${path}?allowWatchBookmarks=true`,
      new Watch(this.#client.kubeConfig),
      list,
      false,
    );
    informer.on('add', (o) => this.#observed(trim(o as unknown as RawProxy)));
    informer.on('update', (o) => this.#observed(trim(o as unknown as RawProxy)));
    informer.on('delete', (o) => this.#removed(o as unknown as RawProxy));
    informer.on('error', (err: unknown) => this.#informerFailed(err));
    this.#informer = informer;
    await informer.start();
    while (!this.#synced) {
      signal.throwIfAborted();
      await sleep(50, signal);
    }
  }

  #informerFailed(err: unknown): void {
    if (this.#closed) return;
    const delay = this.#restartMs;
    this.#restartMs = Math.min(this.#restartMs * 2, RESTART_MAX_MS);
    const status = (err as { statusCode?: unknown } | null)?.statusCode;
    const what = KubeApiError.isInstance(err)
      ? err.message
      : status === 403
        ? `watching Proxies: the API server answered 403 Forbidden; the operator's service account needs this right: the watch verb on proxies in the RBAC of deploy/base`
        : typeof status === 'number'
          ? `watching Proxies: the API server answered ${status} ${messageOf(err)}`
          : `watching Proxies: ${messageOf(err)}`;
    this.#log.error({ err: what, retryInMs: delay }, 'the Proxy informer failed');
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      if (this.#closed) return;
      // start() resumes the watch from the last resourceVersion; only a 410 makes it list again.
      this.#informer?.start().catch((e: unknown) => this.#informerFailed(e));
    }, delay);
    this.#restartTimer.unref?.();
  }

  /** A Proxy added or changed, from the informer. */
  #observed(o: RawProxy): void {
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    const rv = o.metadata.resourceVersion;
    const own = this.#own.get(key);
    const ours = own?.has(rv) === true;
    if (own !== undefined) {
      // Versions up to this one are delivered (or were folded into a new list).
      for (const r of own) if (!newer(r, rv)) own.delete(r);
      if (own.size === 0) this.#own.delete(key);
    }
    const w = this.#written.get(key);
    if (w !== undefined && !newer(w.metadata.resourceVersion, rv)) this.#written.delete(key);
    this.#refresh(key);
    if (!ours) this.#emit(key);
  }

  #removed(o: RawProxy): void {
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    this.#written.delete(key);
    this.#own.delete(key);
    this.#invalid.delete(key);
    this.#view.delete(key);
    this.#emit(key);
  }

  /** The newest copy of a Proxy we know: the informer's, or our own write's answer when newer. */
  #raw(key: string): RawProxy | undefined {
    const i = key.indexOf('/');
    const cached = this.#informer?.get(key.slice(i + 1), key.slice(0, i)) as RawProxy | undefined;
    const w = this.#written.get(key);
    if (w === undefined) return cached;
    if (cached === undefined) return undefined;
    if (cached.metadata.uid !== w.metadata.uid) return cached;
    return newer(w.metadata.resourceVersion, cached.metadata.resourceVersion) ? w : cached;
  }

  /** Rebuilds the reconciler's view of `key` from {@link #raw}. */
  #refresh(key: string): void {
    const o = this.#raw(key);
    if (o === undefined) {
      this.#view.delete(key);
      this.#invalid.delete(key);
      return;
    }
    const v = validateProxySpec(o.spec);
    if (!v.ok) {
      const problems = formatProblems(v.problems);
      const before = this.#invalid.get(key);
      this.#invalid.set(key, { uid: o.metadata.uid, problems });
      this.#view.delete(key);
      if (before?.problems.join('\n') !== problems.join('\n')) {
        this.#log.warn({ proxy: key, problems }, 'Proxy spec is invalid; it is not reconciled');
        this.recordEvent(key, 'Warning', 'InvalidSpec', problems.join('; '), o);
      }
      return;
    }
    this.#invalid.delete(key);
    const md = o.metadata;
    this.#view.set(key, {
      metadata: {
        namespace: md.namespace,
        name: md.name,
        uid: md.uid,
        generation: md.generation ?? 1,
        creationTimestamp: md.creationTimestamp,
        deletionTimestamp: md.deletionTimestamp,
        finalizers: md.finalizers ?? [],
      },
      spec: v.value,
      status: o.status ?? {},
    });
  }

  /** Takes the answer to one of our writes into the view, and remembers its resourceVersion. */
  #wrote(key: string, o: RawProxy): void {
    trim(o);
    const rv = o.metadata.resourceVersion;
    let own = this.#own.get(key);
    if (own === undefined) {
      own = new Set();
      this.#own.set(key, own);
    }
    own.add(rv);
    // A write that released the last finalizer of a deleted Proxy: it is gone.
    if (o.metadata.deletionTimestamp !== undefined && (o.metadata.finalizers ?? []).length === 0) {
      this.#written.delete(key);
      this.#view.delete(key);
      return;
    }
    const i = key.indexOf('/');
    const cached = this.#informer?.get(key.slice(i + 1), key.slice(0, i)) as RawProxy | undefined;
    if (cached === undefined || newer(rv, cached.metadata.resourceVersion)) {
      this.#written.set(key, o);
    }
    this.#refresh(key);
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }

  get(key: string): ProxyObject | undefined {
    return this.#view.get(key);
  }

  list(): ProxyObject[] {
    return [...this.#view.values()];
  }

  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Proxies that cannot be reconciled, each `namespace/name: path: message`. */
  problems(): string[] {
    const out: string[] = [];
    for (const [key, inv] of this.#invalid) for (const p of inv.problems) out.push(`${key}: ${p}`);
    return out;
  }

  /** UIDs of Proxies the store holds but cannot reconcile (an invalid spec): GC leaves their instances alone. */
  protectedUids(): ReadonlySet<string> {
    return new Set([...this.#invalid.values()].map((i) => i.uid));
  }

  /** GETs a Proxy afresh (after a conflict); undefined when it is gone. */
  async #reread(key: string, what: string): Promise<RawProxy | undefined> {
    try {
      const o = await this.#client.request<RawProxy>({
        operation: `re-reading Proxy ${key} after a conflict (${what})`,
        method: 'GET',
        path: this.#proxyPath(key),
        signal: this.#abort.signal,
      });
      return trim(o);
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /**
   * Runs `write` on the newest copy of `key`; on a 409 reads the object again
   * and runs it on that, up to {@link CONFLICT_ATTEMPTS} times. `write`
   * returns undefined when there is nothing to do on that copy.
   */
  async #withRetry(
    key: string,
    what: string,
    write: (o: RawProxy) => Promise<RawProxy | undefined> | undefined,
  ): Promise<void> {
    let base = this.#raw(key);
    for (let attempt = 1; ; attempt++) {
      if (base === undefined) return;
      try {
        const out = await write(base);
        if (out !== undefined) this.#wrote(key, out);
        return;
      } catch (err) {
        if (isStatus(err, 404)) return;
        if (!isStatus(err, 409) || attempt >= CONFLICT_ATTEMPTS) throw err;
        this.#log.debug({ proxy: key, attempt }, `conflict ${what}; reading the Proxy again`);
        base = await this.#reread(key, what);
      }
    }
  }

  async updateStatus(key: string, status: ProxyStatus): Promise<void> {
    const what = `writing the status of Proxy ${key}`;
    await this.#withRetry(key, what, (o) =>
      this.#client.request<RawProxy>({
        operation: what,
        method: 'PUT',
        path: `${this.#proxyPath(key)}/status`,
        body: {
          apiVersion: API_VERSION,
          kind: 'Proxy',
          metadata: {
            name: o.metadata.name,
            namespace: o.metadata.namespace,
            uid: o.metadata.uid,
            resourceVersion: o.metadata.resourceVersion,
          },
          spec: o.spec,
          status,
        },
        signal: this.#abort.signal,
      }),
    );
  }

  async #patchFinalizers(key: string, what: string, next: (f: string[]) => string[] | undefined) {
    await this.#withRetry(key, what, (o) => {
      const finalizers = next(o.metadata.finalizers ?? []);
      if (finalizers === undefined) return undefined;
      return this.#client.request<RawProxy>({
        operation: what,
        method: 'PATCH',
        path: this.#proxyPath(key),
        contentType: 'application/merge-patch+json',
        // The resourceVersion makes the patch conditional: a list changed meanwhile is a 409.
        body: {
          metadata: {
            finalizers: finalizers.length === 0 ? null : finalizers,
            resourceVersion: o.metadata.resourceVersion,
          },
        },
        signal: this.#abort.signal,
      });
    });
  }

  async addFinalizer(key: string, finalizer: string): Promise<void> {
    await this.#patchFinalizers(key, `adding the finalizer to Proxy ${key}`, (f) =>
      f.includes(finalizer) ? undefined : [...f, finalizer],
    );
  }

  async removeFinalizer(key: string, finalizer: string): Promise<void> {
    await this.#patchFinalizers(key, `removing the finalizer from Proxy ${key}`, (f) =>
      f.includes(finalizer) ? f.filter((x) => x !== finalizer) : undefined,
    );
  }

  /**
   * Records an Event on the Proxy (`kubectl describe proxy` shows it). It is
   * sent in the background; a failure is logged, never thrown.
   */
  recordEvent(key: string, type: EventType, reason: string, message: string, raw?: RawProxy): void {
    const o = raw ?? this.#raw(key);
    if (o === undefined || this.#closed) return;
    if (this.#eventQueue.length >= EVENT_QUEUE) {
      this.#log.warn({ proxy: key, reason }, 'too many Events waiting; this one is dropped');
      return;
    }
    const now = this.#now();
    const time = `${now.toISOString().slice(0, 19)}Z`;
    const md = o.metadata;
    this.#eventQueue.push(() =>
      this.#client
        .request<unknown>({
          operation: `recording the ${reason} Event on Proxy ${key}`,
          method: 'POST',
          path: `/api/v1/namespaces/${md.namespace}/events`,
          body: {
            apiVersion: 'v1',
            kind: 'Event',
            metadata: { name: eventName(md.name), namespace: md.namespace },
            involvedObject: {
              apiVersion: API_VERSION,
              kind: 'Proxy',
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
            this.#log.warn(
              { proxy: key, reason, err: messageOf(err) },
              'recording an Event failed',
            );
          },
        ),
    );
    this.#sendEvents();
  }

  /**
   * Sends queued Events, a few at a time: they never hold up the reconciles'
   * own requests, and a burst waits in a bounded queue (beyond it, Events are
   * dropped with a warning, as client-go's recorder does).
   */
  #sendEvents(): void {
    while (this.#eventsInFlight < EVENTS_IN_FLIGHT) {
      const send = this.#eventQueue.shift();
      if (send === undefined) break;
      this.#eventsInFlight++;
      const p = send().finally(() => {
        this.#eventsInFlight--;
        this.#events.delete(p);
        this.#sendEvents();
      });
      this.#events.add(p);
    }
  }

  async writeHealth(health: ProviderHealth): Promise<void> {
    const name = health.name;
    const path = `/apis/${GROUP}/${VERSION}/${HEALTH}/${name}`;
    const signal = this.#abort.signal;
    let base = this.#health.get(name);
    for (let attempt = 1; ; attempt++) {
      try {
        if (base === undefined) {
          base = trim(
            await this.#client.request<RawHealth>({
              operation: `creating ProviderHealth ${name}`,
              method: 'POST',
              path: `/apis/${GROUP}/${VERSION}/${HEALTH}`,
              body: {
                apiVersion: API_VERSION,
                kind: 'ProviderHealth',
                metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'proxy-op' } },
              },
              signal,
            }),
          );
        }
        const out = await this.#client.request<RawHealth>({
          operation: `writing the status of ProviderHealth ${name}`,
          method: 'PUT',
          path: `${path}/status`,
          body: {
            apiVersion: API_VERSION,
            kind: 'ProviderHealth',
            metadata: { name, resourceVersion: base.metadata.resourceVersion },
            status: health.status,
          },
          signal,
        });
        this.#health.set(name, trim(out));
        return;
      } catch (err) {
        if (attempt >= CONFLICT_ATTEMPTS) throw err;
        if (isStatus(err, 404)) base = undefined;
        else if (isStatus(err, 409)) {
          // A stale resourceVersion, or (on create) an object made meanwhile: read it.
          try {
            base = trim(
              await this.#client.request<RawHealth>({
                operation: `re-reading ProviderHealth ${name} after a conflict`,
                method: 'GET',
                path,
                signal,
              }),
            );
          } catch (e) {
            if (!isStatus(e, 404)) throw e;
            base = undefined;
          }
        } else throw err;
      }
    }
  }

  async deleteHealth(name: string): Promise<void> {
    this.#health.delete(name);
    try {
      await this.#client.request<unknown>({
        operation: `deleting ProviderHealth ${name} of a provider no longer configured`,
        method: 'DELETE',
        path: `/apis/${GROUP}/${VERSION}/${HEALTH}/${name}`,
        signal: this.#abort.signal,
      });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  listHealth(): ProviderHealth[] {
    const out: ProviderHealth[] = [];
    for (const [name, h] of this.#health) if (h.status) out.push({ name, status: h.status });
    return out;
  }

  /** Stops the informer, waits for Events in flight, and aborts whatever else is pending. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    await this.#informer?.stop();
    // Events still queued are dropped; those in flight are waited for.
    if (this.#eventQueue.length > 0) {
      this.#log.warn(
        { events: this.#eventQueue.length },
        'stopping; Events not yet sent are dropped',
      );
      this.#eventQueue.length = 0;
    }
    await Promise.allSettled([...this.#events]);
    this.#abort.abort(new Error('the store is closed'));
  }
}
