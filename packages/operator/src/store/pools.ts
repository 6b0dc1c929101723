/**
 * Where ProxyPools live and how the pool controller acts on the Proxies it
 * owns: the Kubernetes API (`kube/pools.ts`), the standalone manifests
 * (`standalone.ts`), or memory ({@link MemoryPoolStore}, for tests,
 * benchmarks and embedding). The Proxies themselves stay in the
 * {@link ProxyStore} the reconciler works over; a pool only creates and
 * deletes them, so a pool's Proxy is reconciled like any other.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../api/canonical-json.js';
import type { PoolObject, PoolSpec, PoolStatus } from '../api/pool.js';
import { API_VERSION, type OwnerReference, type ProxySpec } from '../api/proxy.js';
import { type EventType, type MemoryStore, proxyKey } from './proxies.js';

/** The endpoint lists a pool publishes. */
export interface PublishedEndpoints {
  /** `http://ip:port`, one per verified Proxy (the ConfigMap, status). */
  readonly plain: readonly string[];
  /** The same with each Proxy's credential (the Secret, the standalone file). */
  readonly withCredentials: readonly string[];
  /**
   * The same, named: what `proxy-op gateway` follows (`{ "upstreams": … }`
   * in the Secret's `upstreams.json`, the standalone `NAMESPACE.NAME.upstreams.json`).
   */
  readonly upstreams: readonly PublishedUpstream[];
}

/** One verified Proxy of a pool, as a gateway uses it. */
export interface PublishedUpstream {
  /** The Proxy's name. */
  readonly name: string;
  /** Its URL with its credential. */
  readonly url: string;
  /** When its probe last passed (RFC 3339): a gateway takes it back once this changes. */
  readonly verified?: string | undefined;
  /** Where it runs (from its status), for the gateway's `country` and `region` filters. */
  readonly location?: { readonly country?: string; readonly region?: string } | undefined;
  /** Its provider's name, for the gateway's `provider` filter. */
  readonly provider?: string | undefined;
}

/** The text of an upstreams file: `{ "upstreams": [...] }`, one line per upstream. */
export function upstreamsText(list: readonly PublishedUpstream[]): string {
  const lines = list.map((u) => `    ${JSON.stringify(u)}`);
  return `{\n  "upstreams": [${lines.length === 0 ? '' : `\n${lines.join(',\n')}\n  `}]\n}\n`;
}

/** A new Proxy of a pool. */
export interface PoolProxy {
  /** The Proxy's name (the pool's, a dash and a random suffix). */
  readonly name: string;
  /** The template's labels, the pool's and the template hash. */
  readonly labels: Readonly<Record<string, string>>;
  /** The template's spec, provider and placement from the spread. */
  readonly spec: ProxySpec;
}

/** Where pools are read and their Proxies made and removed. */
export interface PoolStore {
  /** One pool, or undefined when it does not exist. */
  getPool(key: string): PoolObject | undefined;
  /** Every pool. */
  listPools(): PoolObject[];
  /** Subscribes to pool changes; the listener gets the pool's key. */
  watchPools(listener: (key: string) => void): () => void;
  /** Replaces a pool's status; a pool that is gone is ignored. */
  updatePoolStatus(key: string, status: PoolStatus): Promise<void>;
  /** Creates a Proxy owned by the pool (an existing one of that name is left as it is). */
  createProxy(pool: PoolObject, proxy: PoolProxy): Promise<void>;
  /** Asks for a Proxy's deletion (the reconciler deletes its instance first). */
  deleteProxy(key: string): Promise<void>;
  /** Publishes the pool's endpoint lists; the same lists again write nothing. */
  publishEndpoints(pool: PoolObject, endpoints: PublishedEndpoints): Promise<void>;
  /** Records an Event on a pool; never throws. */
  recordPoolEvent?(key: string, type: EventType, reason: string, message: string): void;
  /** Pools the store could not take (an invalid spec), each with its problem. */
  poolProblems?(): readonly string[];
}

/** The owner reference a pool's Proxies carry. */
export function ownerRefOf(pool: PoolObject): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: 'ProxyPool',
    name: pool.metadata.name,
    uid: pool.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Pools in memory over a {@link MemoryStore} of Proxies, with Kubernetes'
 * semantics for what the controller sees (a new UID once, the generation
 * bumped on a spec change, owner references on the Proxies it makes).
 */
export class MemoryPoolStore implements PoolStore {
  readonly #pools = new Map<string, PoolObject>();
  readonly #listeners = new Set<(key: string) => void>();
  readonly #proxies: MemoryStore;
  readonly #now: () => Date;
  /** What each pool last published, by key. */
  readonly published = new Map<string, PublishedEndpoints>();
  /** How many times each pool's endpoints were written. */
  readonly publishes = new Map<string, number>();
  /** The Events recorded on pools, oldest first. */
  readonly events: Array<{ key: string; type: EventType; reason: string; message: string }> = [];

  constructor(proxies: MemoryStore, opts: { now?: () => Date } = {}) {
    this.#proxies = proxies;
    this.#now = opts.now ?? (() => new Date());
  }

  /** Creates or updates a pool with `spec` (already validated). */
  apply(namespace: string, name: string, spec: PoolSpec): PoolObject {
    const key = proxyKey(namespace, name);
    const old = this.#pools.get(key);
    if (old !== undefined && canonicalJson(old.spec) === canonicalJson(spec)) return old;
    const next: PoolObject =
      old === undefined
        ? {
            metadata: {
              namespace,
              name,
              uid: randomUUID(),
              generation: 1,
              creationTimestamp: this.#now().toISOString(),
            },
            spec,
            status: {},
          }
        : { ...old, metadata: { ...old.metadata, generation: old.metadata.generation + 1 }, spec };
    this.#pools.set(key, next);
    this.#emit(key);
    return next;
  }

  /** Deletes a pool (its Proxies go with it, as owner references have them go). */
  delete(key: string): void {
    if (!this.#pools.delete(key)) return;
    this.#emit(key);
  }

  /** {@inheritDoc PoolStore.getPool} */
  getPool(key: string): PoolObject | undefined {
    return this.#pools.get(key);
  }

  /** {@inheritDoc PoolStore.listPools} */
  listPools(): PoolObject[] {
    return [...this.#pools.values()];
  }

  /** {@inheritDoc PoolStore.watchPools} */
  watchPools(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc PoolStore.updatePoolStatus} */
  async updatePoolStatus(key: string, status: PoolStatus): Promise<void> {
    const old = this.#pools.get(key);
    if (old !== undefined) this.#pools.set(key, { ...old, status });
  }

  /** {@inheritDoc PoolStore.createProxy} */
  async createProxy(pool: PoolObject, proxy: PoolProxy): Promise<void> {
    const key = proxyKey(pool.metadata.namespace, proxy.name);
    if (this.#proxies.get(key) !== undefined) return;
    this.#proxies.apply(pool.metadata.namespace, proxy.name, proxy.spec, undefined, {
      labels: proxy.labels,
      ownerReferences: [ownerRefOf(pool)],
    });
  }

  /** {@inheritDoc PoolStore.deleteProxy} */
  async deleteProxy(key: string): Promise<void> {
    this.#proxies.delete(key);
  }

  /** {@inheritDoc PoolStore.publishEndpoints} */
  async publishEndpoints(pool: PoolObject, endpoints: PublishedEndpoints): Promise<void> {
    const key = proxyKey(pool.metadata.namespace, pool.metadata.name);
    const before = this.published.get(key);
    if (before !== undefined && canonicalJson(before) === canonicalJson(endpoints)) return;
    this.published.set(key, endpoints);
    this.publishes.set(key, (this.publishes.get(key) ?? 0) + 1);
  }

  /** {@inheritDoc PoolStore.recordPoolEvent} */
  recordPoolEvent(key: string, type: EventType, reason: string, message: string): void {
    this.events.push({ key, type, reason, message });
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }
}
