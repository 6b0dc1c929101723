/**
 * ProxyPools on the Kubernetes API: an informer of the pools
 * (`informer.ts`), their status through the status
 * subresource, the Proxies a pool owns created with an owner reference (so
 * the garbage collector deletes them with the pool), and the endpoint lists
 * as a ConfigMap (no credentials) and a Secret (with them), both named
 * `<pool>-endpoints` and owned by the pool.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import { canonicalJson } from '../api/canonical-json.js';
import { type PoolObject, type PoolStatus, validatePoolSpec } from '../api/pool.js';
import { API_VERSION, formatProblems, GROUP, VERSION } from '../api/proxy.js';
import {
  ownerRefOf,
  type PoolProxy,
  type PoolStore,
  type PublishedEndpoints,
  upstreamsText,
} from '../store/pools.js';
import { type EventType, proxyKey } from '../store/proxies.js';
import { isStatus, type KubeClient } from './client.js';
import { Informer } from './informer.js';
import { newer, proxiesPath, proxyPath, type RawProxy } from './raw.js';
import type { KubeStore } from './store.js';
import { upsert } from './upsert.js';

/** A ProxyPool as the API server serves it. */
interface RawPool {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    generation?: number;
    creationTimestamp: string;
    deletionTimestamp?: string;
  };
  spec?: unknown;
  status?: PoolStatus;
}

function poolsPath(namespace?: string): string {
  return namespace === undefined
    ? `/apis/${GROUP}/${VERSION}/proxypools`
    : `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/proxypools`;
}

/** Options of {@link KubePoolStore.start}. */
export interface KubePoolStoreOptions {
  /** The client the store lists, watches and writes with. */
  readonly client: KubeClient;
  /** The Proxy store, so a Proxy the pool creates is seen at once (read-your-writes). */
  readonly proxies: KubeStore;
  /** Watch the pools of this namespace only (default: every namespace). */
  readonly namespace?: string | undefined;
  /** Where the store logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** Aborts the start (the first list). */
  readonly signal?: AbortSignal | undefined;
}

/** A {@link PoolStore} over the Kubernetes API. */
export class KubePoolStore implements PoolStore {
  readonly #client: KubeClient;
  readonly #proxies: KubeStore;
  readonly #namespace: string | undefined;
  readonly #log: Logger;
  readonly #abort = new AbortController();
  readonly #pools = new Map<string, PoolObject>();
  readonly #raw = new Map<string, RawPool>();
  readonly #problems = new Map<string, string>();
  readonly #listeners = new Set<(key: string) => void>();
  readonly #published = new Map<string, string>();
  readonly #informer: Informer<RawPool>;

  private constructor(opts: KubePoolStoreOptions) {
    this.#client = opts.client;
    this.#proxies = opts.proxies;
    this.#namespace = opts.namespace;
    this.#log = opts.logger ?? silentLogger;
    this.#informer = new Informer<RawPool>({
      client: opts.client,
      path: poolsPath(opts.namespace),
      what: 'ProxyPools',
      kind: 'ProxyPool',
      logger: this.#log,
      handlers: {
        added: (o) => this.#observed(o),
        updated: (o) => this.#observed(o),
        deleted: (o) => this.#removed(o),
      },
    });
  }

  /** Starts the informer; resolves once the pools are listed. */
  static async start(opts: KubePoolStoreOptions): Promise<KubePoolStore> {
    const s = new KubePoolStore(opts);
    try {
      await s.#informer.start(opts.signal ?? s.#abort.signal);
    } catch (err) {
      await s.close();
      throw err;
    }
    return s;
  }

  #observed(o: RawPool): void {
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    const before = this.#raw.get(key);
    this.#raw.set(key, o);
    const v = validatePoolSpec(o.spec);
    if (!v.ok) {
      const problems = formatProblems(v.problems).join('; ');
      if (this.#problems.get(key) !== problems) {
        this.#log.warn({ pool: key, problems }, 'ProxyPool spec is invalid; it is not reconciled');
      }
      this.#problems.set(key, problems);
      this.#pools.delete(key);
      return;
    }
    this.#problems.delete(key);
    const md = o.metadata;
    this.#pools.set(key, {
      metadata: {
        namespace: md.namespace,
        name: md.name,
        uid: md.uid,
        generation: md.generation ?? 1,
        creationTimestamp: md.creationTimestamp,
        deletionTimestamp: md.deletionTimestamp,
      },
      spec: v.value,
      status: o.status ?? {},
    });
    // Our own status writes change nothing the controller acts on: only spec and deletion queue.
    if (
      before !== undefined &&
      canonicalJson(before.spec) === canonicalJson(o.spec) &&
      before.metadata.deletionTimestamp === md.deletionTimestamp
    ) {
      return;
    }
    for (const l of this.#listeners) l(key);
  }

  #removed(o: RawPool): void {
    const key = proxyKey(o.metadata.namespace, o.metadata.name);
    this.#raw.delete(key);
    this.#pools.delete(key);
    this.#problems.delete(key);
    this.#published.delete(key);
    for (const l of this.#listeners) l(key);
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

  /** {@inheritDoc PoolStore.poolProblems} */
  poolProblems(): string[] {
    return [...this.#problems].map(([k, p]) => `${k}: ${p}`);
  }

  /** {@inheritDoc PoolStore.updatePoolStatus} */
  async updatePoolStatus(key: string, status: PoolStatus): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const o = this.#raw.get(key);
      if (o === undefined) return;
      try {
        const answer = await this.#client.request<RawPool>({
          operation: `writing the status of ProxyPool ${key}`,
          method: 'PUT',
          path: `${poolsPath(o.metadata.namespace)}/${o.metadata.name}/status`,
          body: {
            apiVersion: API_VERSION,
            kind: 'ProxyPool',
            metadata: o.metadata,
            spec: o.spec,
            status,
          },
          signal: this.#abort.signal,
        });
        const now = this.#raw.get(key);
        if (
          now === undefined ||
          newer(answer.metadata.resourceVersion, now.metadata.resourceVersion)
        ) {
          this.#observed(answer);
        }
        return;
      } catch (err) {
        if (isStatus(err, 404)) return;
        if (!isStatus(err, 409) || attempt >= 5) throw err;
        const fresh = await this.#client.request<RawPool>({
          operation: `reading ProxyPool ${key}`,
          method: 'GET',
          path: `${poolsPath(o.metadata.namespace)}/${o.metadata.name}`,
          signal: this.#abort.signal,
        });
        this.#observed(fresh);
      }
    }
  }

  /** {@inheritDoc PoolStore.createProxy} */
  async createProxy(pool: PoolObject, proxy: PoolProxy): Promise<void> {
    const ns = pool.metadata.namespace;
    try {
      const answer = await this.#client.request<RawProxy>({
        operation: `creating Proxy ${ns}/${proxy.name} of ProxyPool ${ns}/${pool.metadata.name}`,
        method: 'POST',
        path: proxiesPath(ns),
        body: {
          apiVersion: API_VERSION,
          kind: 'Proxy',
          metadata: {
            name: proxy.name,
            namespace: ns,
            labels: proxy.labels,
            ownerReferences: [ownerRefOf(pool)],
          },
          spec: proxy.spec,
        },
        signal: this.#abort.signal,
      });
      this.#proxies.noteCreated(answer);
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  }

  /** {@inheritDoc PoolStore.deleteProxy} */
  async deleteProxy(key: string): Promise<void> {
    try {
      await this.#client.request({
        operation: `deleting Proxy ${key}`,
        method: 'DELETE',
        path: proxyPath(key),
        signal: this.#abort.signal,
      });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  /** {@inheritDoc PoolStore.recordPoolEvent} */
  recordPoolEvent(key: string, type: EventType, reason: string, message: string): void {
    const o = this.#raw.get(key);
    if (o !== undefined) this.#proxies.recordPoolEvent(key, o, type, reason, message);
  }

  /** {@inheritDoc PoolStore.publishEndpoints} */
  async publishEndpoints(pool: PoolObject, endpoints: PublishedEndpoints): Promise<void> {
    const { namespace, name } = pool.metadata;
    const key = proxyKey(namespace, name);
    const text = canonicalJson(endpoints);
    if (this.#published.get(key) === text) return;
    const metadata = {
      name: `${name}-endpoints`,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'proxy-op', 'proxy-op.io/pool': name },
      ownerReferences: [ownerRefOf(pool)],
    };
    const lines = (l: readonly string[]) => (l.length === 0 ? '' : `${l.join('\n')}\n`);
    await upsert(this.#client, {
      operation: `writing ConfigMap ${namespace}/${name}-endpoints`,
      collection: `/api/v1/namespaces/${namespace}/configmaps`,
      name: metadata.name,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata,
        data: { endpoints: lines(endpoints.plain) },
      },
      signal: this.#abort.signal,
    });
    await upsert(this.#client, {
      operation: `writing Secret ${namespace}/${name}-endpoints`,
      collection: `/api/v1/namespaces/${namespace}/secrets`,
      name: metadata.name,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata,
        data: {
          endpoints: Buffer.from(lines(endpoints.withCredentials)).toString('base64'),
          'upstreams.json': Buffer.from(upstreamsText(endpoints.upstreams)).toString('base64'),
        },
      },
      signal: this.#abort.signal,
    });
    this.#published.set(key, text);
  }

  /** Stops the informer and aborts the writes in flight. */
  async close(): Promise<void> {
    await this.#informer.stop();
    this.#abort.abort(new Error('the pool store is closed'));
  }
}
