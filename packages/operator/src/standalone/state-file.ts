/**
 * The standalone store's state file: what it holds, where it lives beside
 * the manifests folder, how it is read, replaced atomically (a temporary
 * file, `fsync`, then a rename, so a crash leaves either the old or the new
 * state), and the lock file that keeps a second operator off it.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { readOwnedFile, writeFileAtomic } from '@proxy-op/contract/files';
import type { PoolSpec, PoolStatus } from '../api/pool.js';
import {
  FINALIZER,
  type OwnerReference,
  type ProviderHealth,
  type ProxyObject,
  type ProxySpec,
  type ProxyStatus,
} from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { splitKey } from '../store/proxies.js';

/** The state file's version. */
export const STATE_VERSION = 1;

/** A state file larger than this is refused (some 100,000 Proxies' worth). */
const STATE_FILE_MAX_BYTES = 256 * 1024 * 1024;

/** One Proxy as the state file keeps it. */
export interface StateEntry {
  /** The Proxy's UID, kept across restarts. */
  readonly uid: string;
  /** The Proxy's generation, bumped on every spec change. */
  readonly generation: number;
  /** When the Proxy was first read (RFC 3339). */
  readonly creationTimestamp: string;
  /** Set once its manifest is gone; the entry stays until the finalizers are. */
  readonly deletionTimestamp?: string | undefined;
  /** The Proxy's finalizers. */
  readonly finalizers: readonly string[];
  /** The last valid spec read from the manifest (needed to finish a deletion). */
  readonly spec: ProxySpec;
  /** The manifest file it was read from (`pool NAMESPACE/NAME` for a pool's). */
  readonly source: string;
  /** The status the operator last wrote. */
  readonly status: ProxyStatus;
  /** Labels (a pool's Proxies carry the pool's and the template hash). */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** The manifest's annotations. */
  readonly annotations?: Readonly<Record<string, string>> | undefined;
  /** The pool that owns it; its manifest is the pool's, not its own. */
  readonly ownerReferences?: readonly OwnerReference[] | undefined;
}

/** One ProxyPool as the state file keeps it. */
export interface PoolEntry {
  readonly uid: string;
  readonly generation: number;
  readonly creationTimestamp: string;
  readonly spec: PoolSpec;
  readonly source: string;
  readonly status: PoolStatus;
}

/** The state file's content. */
export interface StateFile {
  /** The format's version ({@link STATE_VERSION}). */
  readonly version: number;
  /** The Proxies, by key (`namespace/name`). */
  readonly proxies: Readonly<Record<string, StateEntry>>;
  /** Each provider's last health status, by provider name. */
  readonly health: Readonly<Record<string, ProviderHealth['status']>>;
  /** The ProxyPools, by key (absent in a state file written before pools). */
  readonly pools?: Readonly<Record<string, PoolEntry>> | undefined;
}

/**
 * A new entry: its UID, generation 1 and the operator's finalizer, so the
 * first write puts it on disk before anything is created for it.
 */
export function newEntry(
  spec: ProxySpec,
  source: string,
  now: string,
  owned?: { labels: Readonly<Record<string, string>>; owner: OwnerReference },
): { -readonly [K in keyof StateEntry]: StateEntry[K] } {
  return {
    uid: randomUUID(),
    generation: 1,
    creationTimestamp: now,
    finalizers: [FINALIZER],
    spec,
    source,
    status: {},
    ...(owned === undefined ? {} : { labels: owned.labels, ownerReferences: [owned.owner] }),
  };
}

/** The Proxy object of the state entry at `key` (`namespace/name`). */
export function entryToProxy(key: string, e: StateEntry): ProxyObject {
  return {
    metadata: {
      ...splitKey(key),
      uid: e.uid,
      generation: e.generation,
      creationTimestamp: e.creationTimestamp,
      deletionTimestamp: e.deletionTimestamp,
      finalizers: e.finalizers,
      labels: e.labels,
      annotations: e.annotations,
      ownerReferences: e.ownerReferences,
    },
    spec: e.spec,
    status: e.status,
  };
}
/** The default state file of a manifests folder
: `<dir>.state.json`. */
export function defaultStateFile(dir: string): string {
  const abs = resolve(dir);
  return join(dirname(abs), `${basename(abs)}${DEFAULTS.stateFileSuffix}`);
}

/** A path beside the state file: `DIR.state.<what>` for `DIR.state.json`. */
export function besideStateFile(stateFile: string, what: string): string {
  const abs = resolve(stateFile);
  return join(dirname(abs), `${basename(abs).replace(/\.json$/, '')}.${what}`);
}

/** Where a standalone operator writes each pool's endpoint file: `DIR.state.endpoints.d`. */
export function endpointsDir(stateFile: string): string {
  return besideStateFile(stateFile, 'endpoints.d');
}

/** Reads a state file; an absent file is an empty state. */
export async function readStateFile(path: string): Promise<StateFile> {
  let text: string;
  try {
    // Never through a link, never a file another user owns or others can write.
    text = (await readOwnedFile(path, { maxBytes: STATE_FILE_MAX_BYTES })).toString('utf8');
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
  return {
    version: STATE_VERSION,
    proxies: parsed.proxies ?? {},
    health: parsed.health ?? {},
    pools: parsed.pools ?? {},
  };
}

/**
 * Replaces the state file with `text` atomically: a temporary file beside
 * it, made exclusively under a random name (never through a link someone
 * planted), written and synced, then renamed over it.
 */
export async function replaceStateFile(path: string, text: string): Promise<void> {
  await writeFileAtomic(path, text);
}

/** The lock file of a state file: `<state file>.lock`. */
export function lockFileOf(stateFile: string): string {
  return `${stateFile}${DEFAULTS.lockFileSuffix}`;
}

/**
 * Takes the state file's lock: a lock file holding this process's pid. A
 * lock held by a live process is refused; one left by a dead process is
 * taken over.
 */
export async function lockStateFile(stateFile: string): Promise<void> {
  const lockFile = lockFileOf(stateFile);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(lockFile, 'wx');
      await fh.writeFile(String(process.pid));
      await fh.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(await readFile(lockFile, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new Error(`${stateFile} is in use by another proxy-op (pid ${pid}); stop it first`);
      }
      await rm(lockFile, { force: true });
    }
  }
  throw new Error(`cannot take the lock ${lockFile}`);
}

/** Releases the state file's lock. */
export async function unlockStateFile(stateFile: string): Promise<void> {
  await rm(lockFileOf(stateFile), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What a {@link StateWriter} is built with. */
export interface StateWriterOptions {
  readonly path: string;
  /** Coalesce changes for this long (ms); longer while writes are slow. */
  readonly delayMs: number;
  /** The state as it is now. */
  readonly snapshot: () => StateFile;
  /** Told about a failed background write (it is tried again). */
  readonly onError: (err: unknown) => void;
}

/**
 * Writes the state file after changes: coalesced (at least `delayMs`, twice
 * the last write's duration when that is longer), one write at a time, each
 * write the state as of a change count, so {@link StateWriter.flush}
 * resolves once every change made before it is on disk.
 */
export class StateWriter {
  readonly #o: StateWriterOptions;
  #changes = 0;
  #written = 0;
  #writing: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastWriteMs = 0;
  #stopped = false;

  constructor(o: StateWriterOptions) {
    this.#o = o;
  }

  /** Counts a change (to be written by the next flush). */
  changed(): void {
    this.#changes++;
  }

  /** Writes soon (coalesced), retrying after a failure. */
  schedule(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const delay = Math.max(this.#o.delayMs, 2 * this.#lastWriteMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch((err: unknown) => {
        this.#o.onError(err);
        this.schedule();
      });
    }, delay);
  }

  /** Writes every change made so far; resolves once it is on disk. */
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

  /** No more scheduled writes (flush still writes). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #writeOnce(): Promise<void> {
    const started = performance.now();
    // The text is made with its version, before the first await: entries change in
    // place, and a change made while the write waits for the file system belongs to
    // the next write, never half to this one (a Proxy released meanwhile would be on
    // disk deleted without its finalizer, which nothing finishes after a crash).
    const version = this.#changes;
    const text = `${JSON.stringify(this.#o.snapshot(), null, 1)}\n`;
    await replaceStateFile(this.#o.path, text);
    this.#written = version;
    this.#lastWriteMs = performance.now() - started;
  }
}
