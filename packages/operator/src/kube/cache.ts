/**
 * The Kubernetes store's cache of Proxies: the informer of Proxies
 * (`informer.ts`) and, over it, the view the reconciler
 * reads, made from the newest of the informer's copy and the answers to
 * the operator's own writes (read-your-writes). Watch events of the
 * operator's own writes queue nothing; a user's changes queue the Proxy.
 * Proxies whose spec does not validate are kept out of the view, and their
 * UIDs protected from GC.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { formatProblems, type ProxyObject, validateProxySpec } from '../api/proxy.js';
import { proxyKey } from '../store/proxies.js';
import type { KubeClient } from './client.js';
import { Informer } from './informer.js';
import { newer, proxiesPath, type RawProxy, trim } from './raw.js';

/** What the cache is built with. */
export interface ProxyCacheOptions {
  readonly client: KubeClient;
  /** Watch the Proxies of this namespace only (default: every namespace). */
  readonly namespace: string | undefined;
  readonly logger: Logger;
  /** Told once per distinct set of problems of a Proxy whose spec does not validate. */
  readonly onInvalid: (key: string, o: RawProxy, problems: readonly string[]) => void;
}

/** The informer and the reconciler's view of the Proxies. */
export class ProxyCache {
  readonly #log: Logger;
  readonly #onInvalid: ProxyCacheOptions['onInvalid'];
  readonly #listeners = new Set<(key: string) => void>();
  /** The objects the reconciler sees, made from the newest of the informer's copy and our own writes. */
  readonly #view = new Map<string, ProxyObject>();
  /** Answers to our own writes that the watch has not delivered yet (read-your-writes). */
  readonly #written = new Map<string, RawProxy>();
  /** resourceVersions our own writes produced, so their watch events queue nothing. */
  readonly #own = new Map<string, Set<string>>();
  /** Proxies the operator created (a pool's) that the informer has not delivered yet. */
  readonly #created = new Set<string>();
  /** Proxies whose spec does not validate: not reconciled, their UIDs protected from GC. */
  readonly #invalid = new Map<string, { uid: string; problems: string[] }>();
  readonly #informer: Informer<RawProxy>;

  constructor(opts: ProxyCacheOptions) {
    this.#log = opts.logger;
    this.#onInvalid = opts.onInvalid;
    this.#informer = new Informer<RawProxy>({
      client: opts.client,
      path: proxiesPath(opts.namespace),
      what: `Proxies${opts.namespace ? ` in ${opts.namespace}` : ''}`,
      kind: 'Proxy',
      logger: opts.logger,
      transform: trim,
      handlers: {
        added: (o) => this.#observed(o),
        updated: (o) => this.#observed(o),
        deleted: (o) => this.#removed(o),
      },
    });
  }

  /** How many full lists of Proxies the informer made (1 unless a watch expired). */
  get lists(): number {
    return this.#informer.lists;
  }

  /** True once the informer has listed the Proxies. */
  get synced(): boolean {
    return this.#informer.synced;
  }

  /** Starts the informer; resolves once it has listed every Proxy, rejects when `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    await this.#informer.start(signal);
  }

  /** Stops the informer. */
  async stop(): Promise<void> {
    await this.#informer.stop();
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
    this.#created.delete(key);
    this.#refresh(key);
    if (!ours) this.#emit(key);
  }

  #removed(o: RawProxy): void {
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    this.#written.delete(key);
    this.#own.delete(key);
    this.#created.delete(key);
    this.#invalid.delete(key);
    this.#view.delete(key);
    this.#emit(key);
  }

  #cached(key: string): RawProxy | undefined {
    return this.#informer.get(key);
  }

  /** The newest copy of a Proxy we know: the informer's, or our own write's answer when newer. */
  raw(key: string): RawProxy | undefined {
    const cached = this.#cached(key);
    const w = this.#written.get(key);
    if (w === undefined) return cached;
    if (cached === undefined) return this.#created.has(key) ? w : undefined;
    if (cached.metadata.uid !== w.metadata.uid) return cached;
    return newer(w.metadata.resourceVersion, cached.metadata.resourceVersion) ? w : cached;
  }

  /** Rebuilds the reconciler's view of `key` from {@link raw}. */
  #refresh(key: string): void {
    const o = this.raw(key);
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
        this.#onInvalid(key, o, problems);
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
        annotations: md.annotations,
        labels: md.labels,
        ownerReferences: md.ownerReferences,
      },
      spec: v.value,
      status: o.status ?? {},
    });
  }

  /** Takes the answer to one of our writes into the view, and remembers its resourceVersion. */
  wrote(key: string, o: RawProxy): void {
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
    const cached = this.#cached(key);
    if (cached === undefined || newer(rv, cached.metadata.resourceVersion)) {
      this.#written.set(key, o);
    }
    this.#refresh(key);
  }

  /**
   * Takes a Proxy the operator just created into the view, before the watch
   * delivers it (so a pool counts it at once); its watch event still queues it.
   */
  created(o: RawProxy): void {
    trim(o);
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    if (this.#cached(key) !== undefined) return;
    this.#written.set(key, o);
    this.#created.add(key);
    this.#refresh(key);
    this.#emit(key);
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }

  /** One Proxy of the view. */
  get(key: string): ProxyObject | undefined {
    return this.#view.get(key);
  }

  /** Every Proxy of the view. */
  list(): ProxyObject[] {
    return [...this.#view.values()];
  }

  /** Subscribes to changes others make; returns the unsubscribe function. */
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

  /** UIDs of Proxies the cache holds but cannot reconcile (an invalid spec). */
  protectedUids(): ReadonlySet<string> {
    return new Set([...this.#invalid.values()].map((i) => i.uid));
  }
}
