/**
 * The standalone store: Proxies read from a folder of manifests (watched,
 * and rescanned every so often), their bookkeeping (UIDs, generations,
 * finalizers, status) and each provider's health kept in the state file
 * beside it, the folder's ProxyPools beside them (`pools.ts`).
 *
 * @module
 */
import { type FSWatcher, watch } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type Logger, silentLogger } from '@proxy-op/contract';
import { checkPrivateFolder } from '@proxy-op/contract/files';
import { canonicalJson } from '../api/canonical-json.js';
import type { ProviderHealth, ProxyObject, ProxyStatus } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { type ProxyStore, splitKey } from '../store/proxies.js';
import { ManifestReader } from './manifests.js';
import { StandalonePools, type StandaloneProxies } from './pools.js';
import {
  defaultStateFile,
  endpointsDir,
  entryToProxy,
  lockStateFile,
  newEntry,
  readStateFile,
  STATE_VERSION,
  type StateEntry,
  StateWriter,
  unlockStateFile,
} from './state-file.js';

/** Options of {@link StandaloneStore.open}. */
export interface StandaloneOptions {
  /** The folder of Proxy manifests (`*.yaml`, `*.yml`; several documents per file allowed). */
  readonly dir: string;
  /** The state file (default: `<dir>.state.json`, beside the folder). */
  readonly stateFile?: string | undefined;
  /** Rescan the folder this often, besides watching it (ms, default 5000; 0 disables). */
  readonly rescanMs?: number | undefined;
  /** Coalesce status writes for this long (ms, default 50). */
  readonly flushDelayMs?: number | undefined;
  /** Watch the folder for changes (default true). */
  readonly watch?: boolean | undefined;
  /** Where the store logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The clock timestamps are taken from; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
}

/** What a scan of the folder found. */
export interface ScanReport {
  /** Keys of the Proxies that are new. */
  readonly created: readonly string[];
  /** Keys of the Proxies whose spec changed. */
  readonly updated: readonly string[];
  /** Keys of the Proxies whose manifest is gone. */
  readonly deleted: readonly string[];
  /** Manifest problems, each `file: path: message`. Proxies of a broken file are kept as they were. */
  readonly problems: readonly string[];
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A {@link ProxyStore} over a folder of manifests and a state file. A new
 * manifest gets its UID and the operator's finalizer in one durable write
 * before anything is created for it; a removed manifest marks its Proxy
 * deleted, and the state forgets it only once the finalizer is gone (after
 * its instance is deleted).
 */
export class StandaloneStore implements ProxyStore {
  /** The manifests folder (absolute). */
  readonly dir: string;
  /** The state file (absolute). */
  readonly stateFile: string;
  readonly #entries = new Map<string, Mutable<StateEntry>>();
  readonly #cache = new Map<string, ProxyObject>();
  readonly #health = new Map<string, ProviderHealth['status']>();
  readonly #listeners = new Set<(key: string) => void>();
  readonly #log: Logger;
  readonly #now: () => Date;
  readonly #writer: StateWriter;
  #problems: readonly string[] = [];
  readonly #manifests: ManifestReader;
  #manifestKeys: ReadonlySet<string> = new Set();
  #scanning: Promise<ScanReport> | undefined;
  #rescanAgain = false;
  #watcher: FSWatcher | undefined;
  #interval: ReturnType<typeof setInterval> | undefined;
  #debounce: ReturnType<typeof setTimeout> | undefined = undefined;
  #closed = false;
  #pools!: StandalonePools;

  private constructor(opts: StandaloneOptions) {
    this.dir = resolve(opts.dir);
    this.stateFile = resolve(opts.stateFile ?? defaultStateFile(opts.dir));
    this.#manifests = new ManifestReader(this.dir);
    this.#log = opts.logger ?? silentLogger;
    this.#now = opts.now ?? (() => new Date());
    this.#writer = new StateWriter({
      path: this.stateFile,
      delayMs: opts.flushDelayMs ?? DEFAULTS.flushDelayMs,
      snapshot: () => ({
        version: STATE_VERSION,
        proxies: Object.fromEntries(this.#entries),
        health: Object.fromEntries(this.#health),
        pools: this.#pools?.state(),
      }),
      onError: (err) =>
        this.#log.error({ err: (err as Error).message }, 'writing the state file failed'),
    });
  }

  /**
   * Opens the store: takes the state file's lock (a second operator on the
   * same folder is refused; a lock left by a dead process is taken over),
   * loads the state, scans the folder and starts watching it.
   */
  static async open(opts: StandaloneOptions): Promise<StandaloneStore> {
    const store = new StandaloneStore(opts);
    // The state file's folder holds the state, the credentials and the proxies' files: it must
    // be this user's, and no one else may write it (or plant a file in it).
    await mkdir(dirname(store.stateFile), { recursive: true });
    await checkPrivateFolder(dirname(store.stateFile));
    await lockStateFile(store.stateFile);
    try {
      const state = await readStateFile(store.stateFile);
      const released: string[] = [];
      for (const [key, e] of Object.entries(state.proxies)) {
        // Deleted with no finalizer left: gone, as the store forgets it at once (a
        // torn write of an earlier version could leave one behind).
        if (e.deletionTimestamp !== undefined && e.finalizers.length === 0) {
          released.push(key);
          continue;
        }
        store.#entries.set(key, { ...e });
        store.#cache.set(key, entryToProxy(key, e));
      }
      for (const [name, h] of Object.entries(state.health)) store.#health.set(name, h);
      store.#pools = new StandalonePools(
        store.#owned(),
        endpointsDir(store.stateFile),
        state.pools ?? {},
      );
      await store.rescan();
      if (released.length > 0) {
        store.#log.warn(
          { proxies: released },
          'the state file held deleted Proxies without finalizers; forgetting them',
        );
        store.#writer.changed();
        await store.flush();
      }
      if (opts.watch !== false) store.#startWatching(opts.rescanMs ?? DEFAULTS.rescanMs);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  /** The ProxyPools of the folder, as the pool controller's store. */
  get pools(): StandalonePools {
    return this.#pools;
  }

  /** What the pools do to the Proxies: entries owned by a pool, made and marked deleted here. */
  #owned(): StandaloneProxies {
    return {
      createOwned: async (key, spec, labels, owner) => {
        if (this.#entries.has(key) || this.#closed) return;
        const source = `pool ${splitKey(key).namespace}/${owner.name}`;
        const entry = newEntry(spec, source, this.#now().toISOString(), { labels, owner });
        this.#entries.set(key, entry);
        this.#touch(key, entry);
        await this.flush();
        this.#emit(key);
      },
      deleteProxy: async (key) => {
        const e = this.#entries.get(key);
        if (e === undefined || e.deletionTimestamp !== undefined) return;
        e.deletionTimestamp = this.#now().toISOString();
        this.#touch(key, e);
        this.#writer.schedule();
        this.#emit(key);
      },
      changed: () => {
        this.#writer.changed();
        this.#writer.schedule();
      },
    };
  }

  /** Manifest problems found by the last scan. */
  problems(): readonly string[] {
    return this.#problems;
  }

  /** {@inheritDoc ProxyStore.get} */
  get(key: string): ProxyObject | undefined {
    return this.#cache.get(key);
  }

  /** {@inheritDoc ProxyStore.list} */
  list(): ProxyObject[] {
    return [...this.#cache.values()];
  }

  /** {@inheritDoc ProxyStore.watch} */
  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc ProxyStore.updateStatus} */
  async updateStatus(key: string, status: ProxyStatus): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.status = status;
    this.#touch(key, e);
    this.#writer.schedule();
  }

  /** {@inheritDoc ProxyStore.addFinalizer} */
  async addFinalizer(key: string, finalizer: string): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined || e.finalizers.includes(finalizer) || e.deletionTimestamp) return;
    e.finalizers = [...e.finalizers, finalizer];
    this.#touch(key, e);
    await this.flush();
  }

  /** {@inheritDoc ProxyStore.removeFinalizer} */
  async removeFinalizer(key: string, finalizer: string): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.finalizers = e.finalizers.filter((f) => f !== finalizer);
    if (e.finalizers.length === 0 && e.deletionTimestamp !== undefined) {
      this.#entries.delete(key);
      this.#cache.delete(key);
      this.#writer.changed();
      // A manifest put back while its Proxy was being deleted becomes a new Proxy now.
      if (this.#manifestKeys.has(key) && !this.#closed) {
        this.rescan().catch((err: unknown) =>
          this.#log.error({ err: (err as Error).message }, 'scanning the manifests failed'),
        );
      }
    } else this.#touch(key, e);
    this.#writer.schedule();
  }

  /** {@inheritDoc ProxyStore.writeHealth} */
  async writeHealth(health: ProviderHealth): Promise<void> {
    this.#health.set(health.name, health.status);
    this.#writer.changed();
    this.#writer.schedule();
  }

  /** {@inheritDoc ProxyStore.deleteHealth} */
  async deleteHealth(name: string): Promise<void> {
    if (this.#health.delete(name)) {
      this.#writer.changed();
      this.#writer.schedule();
    }
  }

  /** {@inheritDoc ProxyStore.listHealth} */
  listHealth(): ProviderHealth[] {
    return [...this.#health].map(([name, status]) => ({ name, status }));
  }

  #touch(key: string, e: StateEntry): void {
    this.#writer.changed();
    this.#cache.set(key, entryToProxy(key, e));
  }

  /** Scans the folder now and applies what changed (scans never overlap). */
  rescan(): Promise<ScanReport> {
    if (this.#scanning !== undefined) {
      this.#rescanAgain = true;
      return this.#scanning;
    }
    const run = async (): Promise<ScanReport> => {
      try {
        let report = await this.#scan();
        while (this.#rescanAgain) {
          this.#rescanAgain = false;
          report = await this.#scan();
        }
        return report;
      } finally {
        this.#scanning = undefined;
      }
    };
    this.#scanning = run();
    return this.#scanning;
  }

  async #scan(): Promise<ScanReport> {
    const read = await this.#manifests.read({ create: true });
    const { proxies: found, invalidKeys, brokenFiles, problems, warnings } = read;
    const created: string[] = [];
    const updated: string[] = [];
    const deleted: string[] = [];
    const now = this.#now().toISOString();
    for (const [key, m] of found) {
      const e = this.#entries.get(key);
      if (e === undefined) {
        const entry = newEntry(m.spec, m.source, now);
        if (m.annotations !== undefined) entry.annotations = m.annotations;
        this.#entries.set(key, entry);
        this.#touch(key, entry);
        created.push(key);
      } else if (e.deletionTimestamp === undefined) {
        if (canonicalJson(e.spec) !== canonicalJson(m.spec)) {
          e.spec = m.spec;
          e.annotations = m.annotations;
          e.generation += 1;
          e.source = m.source;
          this.#touch(key, e);
          updated.push(key);
        } else if (canonicalJson(e.annotations ?? {}) !== canonicalJson(m.annotations ?? {})) {
          // Metadata, not spec: no new generation (as on Kubernetes), but the Proxy is looked at.
          e.annotations = m.annotations;
          e.source = m.source;
          this.#touch(key, e);
          updated.push(key);
        } else if (e.source !== m.source) {
          e.source = m.source;
          this.#writer.changed();
        }
      }
    }
    for (const [key, e] of this.#entries) {
      if (found.has(key) || invalidKeys.has(key) || brokenFiles.has(e.source)) continue;
      if (e.ownerReferences !== undefined) continue; // a pool's: it goes with its pool
      if (e.deletionTimestamp !== undefined) continue;
      if (e.finalizers.length === 0) {
        this.#entries.delete(key);
        this.#cache.delete(key);
        this.#writer.changed();
      } else {
        e.deletionTimestamp = now;
        this.#touch(key, e);
      }
      deleted.push(key);
    }
    // Warnings show beside the problems (the live table, the page); they change nothing.
    this.#problems = [...problems, ...warnings.map((w) => w.replace(': ', ': warning: '))];
    this.#manifestKeys = new Set(found.keys());
    for (const p of problems) this.#log.warn({ problem: p }, 'manifest problem');
    for (const w of warnings) this.#log.warn({ warning: w }, 'manifest warning');
    const pools = this.pools.sync(read.pools, read.invalidPoolKeys, brokenFiles, now);
    // UIDs and finalizers must be on disk before the reconciler can create anything.
    if (created.length + updated.length + deleted.length + pools.length > 0) await this.flush();
    await this.pools.removeGone();
    for (const key of [...created, ...updated, ...deleted]) this.#emit(key);
    this.pools.emit(pools);
    return { created, updated, deleted, problems };
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }

  #startWatching(rescanMs: number): void {
    const kick = () => {
      if (this.#closed || this.#debounce !== undefined) return;
      this.#debounce = setTimeout(() => {
        this.#debounce = undefined;
        this.rescan().catch((err: unknown) =>
          this.#log.error({ err: (err as Error).message }, 'scanning the manifests failed'),
        );
      }, 100);
    };
    try {
      this.#watcher = watch(this.dir, { persistent: false }, kick);
      this.#watcher.on('error', () => {});
    } catch {
      // Polling below still sees changes.
    }
    if (rescanMs > 0) this.#interval = setInterval(kick, rescanMs);
  }

  /** Writes every change made so far to the state file; resolves once it is on disk. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** Stops watching, writes what is pending and releases the lock. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watcher?.close();
    clearInterval(this.#interval);
    clearTimeout(this.#debounce);
    this.#writer.stop();
    await this.#scanning?.catch(() => {});
    try {
      await this.flush();
    } finally {
      await unlockStateFile(this.stateFile);
    }
  }
}
