/**
 * ProxyPools in standalone mode: read from the same manifests folder as the
 * Proxies (`kind: ProxyPool`), kept in the same state file (UIDs,
 * generations, status), their Proxies made as state entries owned by the
 * pool (they have no manifest of their own, and a pool's manifest removed
 * takes them with it, as owner references do on Kubernetes). The endpoint
 * list with credentials is a file per pool beside the state file, one URL
 * per line, mode 0600, replaced atomically.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ensurePrivateFolder, writeFileAtomic } from '@proxy-op/contract/files';
import { canonicalJson } from '../api/canonical-json.js';
import type { PoolObject, PoolSpec, PoolStatus } from '../api/pool.js';
import type { OwnerReference, ProxySpec } from '../api/proxy.js';
import {
  ownerRefOf,
  type PoolProxy,
  type PoolStore,
  type PublishedEndpoints,
  upstreamsText,
} from '../store/pools.js';
import { proxyKey, splitKey } from '../store/proxies.js';
import type { PoolEntry } from './state-file.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What the pools need of the standalone store. */
export interface StandaloneProxies {
  /** Adds a Proxy entry owned by a pool (durably, with the finalizer) unless one has that key. */
  createOwned(
    key: string,
    spec: ProxySpec,
    labels: Readonly<Record<string, string>>,
    owner: OwnerReference,
  ): Promise<void>;
  /** Marks a Proxy deleted (its finalizer makes the reconciler delete the instance). */
  deleteProxy(key: string): Promise<void>;
  /** Something of the pools changed: the state file is to be written. */
  changed(): void;
}

/** The endpoint file of pool `key` in `dir`: `NAMESPACE.NAME`. */
export function endpointsFile(dir: string, key: string): string {
  return join(dir, key.replace('/', '.'));
}

/** The file of a pool's named upstreams, for `proxy-op gateway`: `NAMESPACE.NAME.upstreams.json`. */
export function upstreamsFile(dir: string, key: string): string {
  return `${endpointsFile(dir, key)}.upstreams.json`;
}

/** The pools of a standalone store. */
export class StandalonePools implements PoolStore {
  readonly #entries = new Map<string, Mutable<PoolEntry>>();
  readonly #listeners = new Set<(key: string) => void>();
  readonly #proxies: StandaloneProxies;
  readonly #dir: string;
  readonly #published = new Map<string, string>();
  /** Pools a scan removed whose endpoint files are still to be removed. */
  readonly #gone = new Set<string>();

  /** `dir`: where the endpoint files go. */
  constructor(proxies: StandaloneProxies, dir: string, state: Readonly<Record<string, PoolEntry>>) {
    this.#proxies = proxies;
    this.#dir = dir;
    for (const [k, e] of Object.entries(state)) this.#entries.set(k, { ...e });
  }

  /** The entries as the state file keeps them. */
  state(): Record<string, PoolEntry> {
    return Object.fromEntries(this.#entries);
  }

  /**
   * Applies a scan: new pools get a UID, changed ones a new generation,
   * those whose manifest is gone are removed (their Proxies go next, with
   * the controller). Pools of files that failed to read stay as they were.
   */
  sync(
    found: ReadonlyMap<string, { readonly spec: PoolSpec; readonly source: string }>,
    invalid: ReadonlySet<string>,
    brokenFiles: ReadonlySet<string>,
    now: string,
  ): string[] {
    const touched: string[] = [];
    for (const [key, m] of found) {
      const e = this.#entries.get(key);
      if (e === undefined) {
        this.#entries.set(key, {
          uid: randomUUID(),
          generation: 1,
          creationTimestamp: now,
          spec: m.spec,
          source: m.source,
          status: {},
        });
        touched.push(key);
      } else if (canonicalJson(e.spec) !== canonicalJson(m.spec)) {
        e.spec = m.spec;
        e.generation += 1;
        e.source = m.source;
        touched.push(key);
      }
    }
    for (const [key, e] of this.#entries) {
      if (found.has(key) || invalid.has(key) || brokenFiles.has(e.source)) continue;
      this.#entries.delete(key);
      this.#published.delete(key);
      this.#gone.add(key);
      touched.push(key);
    }
    if (touched.length > 0) this.#proxies.changed();
    return touched;
  }

  /**
   * Removes the endpoint files of the pools scans removed: they name
   * Proxies (and hold credentials) that are being deleted.
   */
  async removeGone(): Promise<void> {
    for (const key of [...this.#gone]) {
      this.#gone.delete(key);
      await rm(upstreamsFile(this.#dir, key), { force: true });
      await rm(endpointsFile(this.#dir, key), { force: true });
    }
  }

  /** Tells the listeners about pools a scan changed. */
  emit(keys: readonly string[]): void {
    for (const k of keys) for (const l of this.#listeners) l(k);
  }

  /** {@inheritDoc PoolStore.getPool} */
  getPool(key: string): PoolObject | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    return {
      metadata: {
        ...splitKey(key),
        uid: e.uid,
        generation: e.generation,
        creationTimestamp: e.creationTimestamp,
      },
      spec: e.spec,
      status: e.status,
    };
  }

  /** {@inheritDoc PoolStore.listPools} */
  listPools(): PoolObject[] {
    return [...this.#entries.keys()].map((k) => this.getPool(k) as PoolObject);
  }

  /** {@inheritDoc PoolStore.watchPools} */
  watchPools(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc PoolStore.updatePoolStatus} */
  async updatePoolStatus(key: string, status: PoolStatus): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.status = status;
    this.#proxies.changed();
  }

  /** {@inheritDoc PoolStore.createProxy} */
  async createProxy(pool: PoolObject, proxy: PoolProxy): Promise<void> {
    const key = proxyKey(pool.metadata.namespace, proxy.name);
    await this.#proxies.createOwned(key, proxy.spec, proxy.labels, ownerRefOf(pool));
  }

  /** {@inheritDoc PoolStore.deleteProxy} */
  deleteProxy(key: string): Promise<void> {
    return this.#proxies.deleteProxy(key);
  }

  /** {@inheritDoc PoolStore.publishEndpoints} */
  async publishEndpoints(pool: PoolObject, endpoints: PublishedEndpoints): Promise<void> {
    const key = proxyKey(pool.metadata.namespace, pool.metadata.name);
    const text = endpoints.withCredentials.map((u) => `${u}\n`).join('');
    const named = upstreamsText(endpoints.upstreams);
    if (this.#published.get(key) === `${text}\0${named}`) return;
    await ensurePrivateFolder(this.#dir);
    // The named list first: a gateway following it never lags behind the plain one.
    await writeFileAtomic(upstreamsFile(this.#dir, key), named);
    await writeFileAtomic(endpointsFile(this.#dir, key), text);
    this.#published.set(key, `${text}\0${named}`);
  }
}
