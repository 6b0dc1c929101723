/**
 * The standalone store: Proxy manifests in a folder (the YAML a user would
 * `kubectl apply`), and a state file beside the folder that keeps what a
 * cluster would: UIDs generated once, generations, finalizers, deletion
 * timestamps and status. The state file is replaced atomically (a temporary
 * file, then a rename), so a crash leaves either the old or the new state.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { type Logger, silentLogger } from '@proxy-op/contract';
import { LineCounter, parseAllDocuments } from 'yaml';
import { canonicalJson } from './cloudinit.js';
import {
  FINALIZER,
  formatProblems,
  type ProviderHealth,
  type ProxyObject,
  type ProxySpec,
  type ProxyStatus,
  validateProxyManifest,
} from './schema.js';
import { type ProxyStore, proxyKey } from './store.js';

/** The state file's version. */
export const STATE_VERSION = 1;

/** One Proxy as the state file keeps it. */
export interface StateEntry {
  readonly uid: string;
  readonly generation: number;
  readonly creationTimestamp: string;
  readonly deletionTimestamp?: string | undefined;
  readonly finalizers: readonly string[];
  /** The last valid spec read from the manifest (needed to finish a deletion). */
  readonly spec: ProxySpec;
  /** The manifest file it was read from. */
  readonly source: string;
  readonly status: ProxyStatus;
}

/** The state file's content. */
export interface StateFile {
  readonly version: number;
  readonly proxies: Readonly<Record<string, StateEntry>>;
  readonly health: Readonly<Record<string, ProviderHealth['status']>>;
}

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
  readonly logger?: Logger | undefined;
  readonly now?: (() => Date) | undefined;
}

/** The default state file of a manifests folder: `<dir>.state.json`. */
export function defaultStateFile(dir: string): string {
  const abs = resolve(dir);
  return join(dirname(abs), `${basename(abs)}.state.json`);
}

/** Reads a state file; an absent file is an empty state. */
export async function readStateFile(path: string): Promise<StateFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return { version: STATE_VERSION, proxies: {}, health: {} };
    }
    throw err;
  }
  const parsed = JSON.parse(text) as StateFile;
  if (parsed.version !== STATE_VERSION) {
    throw new Error(`${path}: state version ${String(parsed.version)} is not ${STATE_VERSION}`);
  }
  return { version: STATE_VERSION, proxies: parsed.proxies ?? {}, health: parsed.health ?? {} };
}

/** What a scan of the folder found. */
export interface ScanReport {
  readonly created: readonly string[];
  readonly updated: readonly string[];
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
  readonly #flushDelay: number;
  #problems: readonly string[] = [];
  #manifestKeys: ReadonlySet<string> = new Set();
  #changes = 0;
  #written = 0;
  #writing: Promise<void> | undefined;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #lastWriteMs = 0;
  #scanning: Promise<ScanReport> | undefined;
  #rescanAgain = false;
  #watcher: FSWatcher | undefined;
  #interval: ReturnType<typeof setInterval> | undefined;
  #debounce: ReturnType<typeof setTimeout> | undefined = undefined;
  #closed = false;
  #lockFile: string;

  private constructor(opts: StandaloneOptions) {
    this.dir = resolve(opts.dir);
    this.stateFile = resolve(opts.stateFile ?? defaultStateFile(opts.dir));
    this.#lockFile = `${this.stateFile}.lock`;
    this.#log = opts.logger ?? silentLogger;
    this.#now = opts.now ?? (() => new Date());
    this.#flushDelay = opts.flushDelayMs ?? 50;
  }

  /**
   * Opens the store: takes the state file's lock (a second operator on the
   * same folder is refused; a lock left by a dead process is taken over),
   * loads the state, scans the folder and starts watching it.
   */
  static async open(opts: StandaloneOptions): Promise<StandaloneStore> {
    const store = new StandaloneStore(opts);
    await mkdir(dirname(store.stateFile), { recursive: true });
    await store.#lock();
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
        store.#cache.set(key, toProxy(key, e));
      }
      for (const [name, h] of Object.entries(state.health)) store.#health.set(name, h);
      await store.rescan();
      if (released.length > 0) {
        store.#log.warn(
          { proxies: released },
          'the state file held deleted Proxies without finalizers; forgetting them',
        );
        store.#changes++;
        await store.flush();
      }
      if (opts.watch !== false) store.#startWatching(opts.rescanMs ?? 5000);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  async #lock(): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fh = await open(this.#lockFile, 'wx');
        await fh.writeFile(String(process.pid));
        await fh.close();
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const pid = Number.parseInt(await readFile(this.#lockFile, 'utf8').catch(() => ''), 10);
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
          throw new Error(
            `${this.stateFile} is in use by another proxy-op (pid ${pid}); stop it first`,
          );
        }
        await rm(this.#lockFile, { force: true });
      }
    }
    throw new Error(`cannot take the lock ${this.#lockFile}`);
  }

  /** Manifest problems found by the last scan. */
  problems(): readonly string[] {
    return this.#problems;
  }

  get(key: string): ProxyObject | undefined {
    return this.#cache.get(key);
  }

  list(): ProxyObject[] {
    return [...this.#cache.values()];
  }

  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async updateStatus(key: string, status: ProxyStatus): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.status = status;
    this.#touch(key, e);
    this.#scheduleFlush();
  }

  async addFinalizer(key: string, finalizer: string): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined || e.finalizers.includes(finalizer) || e.deletionTimestamp) return;
    e.finalizers = [...e.finalizers, finalizer];
    this.#touch(key, e);
    await this.flush();
  }

  async removeFinalizer(key: string, finalizer: string): Promise<void> {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.finalizers = e.finalizers.filter((f) => f !== finalizer);
    if (e.finalizers.length === 0 && e.deletionTimestamp !== undefined) {
      this.#entries.delete(key);
      this.#cache.delete(key);
      this.#changes++;
      // A manifest put back while its Proxy was being deleted becomes a new Proxy now.
      if (this.#manifestKeys.has(key) && !this.#closed) {
        this.rescan().catch((err: unknown) =>
          this.#log.error({ err: (err as Error).message }, 'scanning the manifests failed'),
        );
      }
    } else this.#touch(key, e);
    this.#scheduleFlush();
  }

  async writeHealth(health: ProviderHealth): Promise<void> {
    this.#health.set(health.name, health.status);
    this.#changes++;
    this.#scheduleFlush();
  }

  async deleteHealth(name: string): Promise<void> {
    if (this.#health.delete(name)) {
      this.#changes++;
      this.#scheduleFlush();
    }
  }

  listHealth(): ProviderHealth[] {
    return [...this.#health].map(([name, status]) => ({ name, status }));
  }

  #touch(key: string, e: StateEntry): void {
    this.#changes++;
    this.#cache.set(key, toProxy(key, e));
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
    const problems: string[] = [];
    const found = new Map<string, { spec: ProxySpec; source: string }>();
    const protectedKeys = new Set<string>();
    const brokenFiles = new Set<string>();
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((n) => /\.ya?ml$/i.test(n) && !n.startsWith('.'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(this.dir, { recursive: true });
      names = [];
    }
    names.sort();
    const texts = await readAll(this.dir, names);
    for (const file of names) {
      const text = texts.get(file);
      if (text === undefined) continue;
      if (text instanceof Error) {
        problems.push(`${file}: ${text.message}`);
        brokenFiles.add(file);
        continue;
      }
      const lc = new LineCounter();
      const docs = parseAllDocuments(text, { lineCounter: lc });
      if (!Array.isArray(docs)) {
        brokenFiles.add(file);
        continue;
      }
      docs.forEach((doc, i) => {
        const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
        if (doc.errors.length > 0) {
          brokenFiles.add(file);
          for (const e of doc.errors) {
            const pos = lc.linePos(e.pos[0]);
            problems.push(
              `${where}: line ${pos.line}, column ${pos.col}: ${e.message.split('\n')[0]}`,
            );
          }
          return;
        }
        const raw: unknown = doc.toJS();
        if (raw === null || raw === undefined) return;
        const v = validateProxyManifest(raw);
        if (!v.ok) {
          for (const line of formatProblems(v.problems)) problems.push(`${where}: ${line}`);
          const md = (raw as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
          if (typeof md?.name === 'string') {
            const ns = typeof md.namespace === 'string' ? md.namespace : 'default';
            protectedKeys.add(proxyKey(ns, md.name));
          } else brokenFiles.add(file);
          return;
        }
        const key = proxyKey(v.value.metadata.namespace, v.value.metadata.name);
        const dup = found.get(key);
        if (dup !== undefined) {
          problems.push(`${where}: metadata.name: ${key} is already defined in ${dup.source}`);
          return;
        }
        found.set(key, { spec: v.value.spec, source: file });
      });
    }
    const created: string[] = [];
    const updated: string[] = [];
    const deleted: string[] = [];
    const now = this.#now().toISOString();
    for (const [key, m] of found) {
      const e = this.#entries.get(key);
      if (e === undefined) {
        const entry: Mutable<StateEntry> = {
          uid: randomUUID(),
          generation: 1,
          creationTimestamp: now,
          finalizers: [FINALIZER],
          spec: m.spec,
          source: m.source,
          status: {},
        };
        this.#entries.set(key, entry);
        this.#touch(key, entry);
        created.push(key);
      } else if (e.deletionTimestamp === undefined) {
        if (canonicalJson(e.spec) !== canonicalJson(m.spec)) {
          e.spec = m.spec;
          e.generation += 1;
          e.source = m.source;
          this.#touch(key, e);
          updated.push(key);
        } else if (e.source !== m.source) {
          e.source = m.source;
          this.#changes++;
        }
      }
    }
    for (const [key, e] of this.#entries) {
      if (found.has(key) || protectedKeys.has(key) || brokenFiles.has(e.source)) continue;
      if (e.deletionTimestamp !== undefined) continue;
      if (e.finalizers.length === 0) {
        this.#entries.delete(key);
        this.#cache.delete(key);
        this.#changes++;
      } else {
        e.deletionTimestamp = now;
        this.#touch(key, e);
      }
      deleted.push(key);
    }
    this.#problems = problems;
    this.#manifestKeys = new Set(found.keys());
    for (const p of problems) this.#log.warn({ problem: p }, 'manifest problem');
    // UIDs and finalizers must be on disk before the reconciler can create anything.
    if (created.length > 0 || updated.length > 0 || deleted.length > 0) await this.flush();
    for (const key of [...created, ...updated, ...deleted]) this.#emit(key);
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

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined || this.#closed) return;
    const delay = Math.max(this.#flushDelay, 2 * this.#lastWriteMs);
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.flush().catch((err: unknown) => {
        this.#log.error({ err: (err as Error).message }, 'writing the state file failed');
        this.#scheduleFlush();
      });
    }, delay);
  }

  /** Writes every change made so far to the state file; resolves once it is on disk. */
  async flush(): Promise<void> {
    const target = this.#changes;
    while (this.#written < target) {
      if (this.#writing !== undefined) {
        await this.#writing.catch(() => {});
        continue;
      }
      this.#writing = this.#writeOnce().finally(() => {
        this.#writing = undefined;
      });
      await this.#writing;
    }
  }

  async #writeOnce(): Promise<void> {
    const started = performance.now();
    // The text is made with its version, before the first await: entries change in
    // place, and a change made while the write waits for the file system belongs to
    // the next write, never half to this one (a Proxy released meanwhile would be on
    // disk deleted without its finalizer, which nothing finishes after a crash).
    const version = this.#changes;
    const state: StateFile = {
      version: STATE_VERSION,
      proxies: Object.fromEntries(this.#entries),
      health: Object.fromEntries(this.#health),
    };
    const text = `${JSON.stringify(state, null, 1)}\n`;
    const tmp = `${this.stateFile}.tmp-${process.pid}`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.stateFile);
    this.#written = version;
    this.#lastWriteMs = performance.now() - started;
  }

  /** Stops watching, writes what is pending and releases the lock. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watcher?.close();
    clearInterval(this.#interval);
    clearTimeout(this.#debounce);
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    await this.#scanning?.catch(() => {});
    try {
      await this.flush();
    } finally {
      await rm(this.#lockFile, { force: true });
    }
  }
}

/** Reads the files concurrently (a bounded number at a time); a file gone meanwhile is left out. */
async function readAll(
  dir: string,
  names: readonly string[],
): Promise<Map<string, string | Error>> {
  const out = new Map<string, string | Error>();
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const file = names[next++] as string;
      try {
        out.set(file, await readFile(join(dir, file), 'utf8'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') out.set(file, err as Error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(32, names.length) }, worker));
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function toProxy(key: string, e: StateEntry): ProxyObject {
  const i = key.indexOf('/');
  return {
    metadata: {
      namespace: key.slice(0, i),
      name: key.slice(i + 1),
      uid: e.uid,
      generation: e.generation,
      creationTimestamp: e.creationTimestamp,
      deletionTimestamp: e.deletionTimestamp,
      finalizers: e.finalizers,
    },
    spec: e.spec,
    status: e.status,
  };
}
