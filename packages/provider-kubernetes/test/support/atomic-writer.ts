/**
 * The kubelet's way of writing a Secret (or ConfigMap, or projected)
 * volume, so that a container reading it never sees a half-written or
 * mixed set of files: each version goes into a new hidden directory named
 * for the time it was written (`..2026_12_01_23_10_31.<random>`), a
 * `..data` symlink is pointed at it by renaming a fresh symlink over the
 * old one (one atomic step), each key is a symlink `<key> → ..data/<key>`
 * made once, and the previous version's directory is removed last. A
 * reader that resolves `<key>` gets the whole old version or the whole new
 * one. A `subPath` mount would pin one resolved file, which is why only a
 * directory mount sees updates.
 *
 * Peer: the local filesystem (rename and symlink semantics of Linux).
 *
 * @module
 */
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';

/** One file of a volume's payload. */
export interface PayloadFile {
  readonly data: Uint8Array;
  /** The file's mode (a Secret volume's `defaultMode` or the item's `mode`). */
  readonly mode: number;
}

/** The symlink naming the current version's directory. */
export const DATA_LINK = '..data';
const DATA_TMP = '..data_tmp';

/** `..YYYY_MM_DD_HH_MM_SS.`: the prefix of a version's directory, in UTC. */
function versionPrefix(at: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `..${at.getUTCFullYear()}_${p(at.getUTCMonth() + 1)}_${p(at.getUTCDate())}_${p(
    at.getUTCHours(),
  )}_${p(at.getUTCMinutes())}_${p(at.getUTCSeconds())}.`;
}

async function currentVersion(dir: string): Promise<string | undefined> {
  try {
    return await readlink(join(dir, DATA_LINK));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** True when the version directory holds exactly `payload`. */
async function holds(versionDir: string, payload: Record<string, PayloadFile>): Promise<boolean> {
  const names = await readdir(versionDir).catch(() => undefined);
  if (names === undefined || names.length !== Object.keys(payload).length) return false;
  for (const [key, file] of Object.entries(payload)) {
    const now = await readFile(join(versionDir, key)).catch(() => undefined);
    if (now === undefined || !now.equals(Buffer.from(file.data))) return false;
  }
  return true;
}

/** Writes one volume's directory, a version at a time. */
export class AtomicWriter {
  readonly #dir: string;
  readonly #group: number | undefined;

  /**
   * @param dir the volume's directory (made when missing)
   * @param group the group the files are given (a Pod's `fsGroup`), when set
   */
  constructor(dir: string, group?: number) {
    this.#dir = dir;
    this.#group = group;
  }

  /** The volume's directory. */
  get dir(): string {
    return this.#dir;
  }

  /**
   * Makes the directory hold `payload` (flat keys only, as a Secret's):
   * nothing is written when it already does. Resolves with true when a
   * new version was put in place.
   */
  async write(payload: Record<string, PayloadFile>, at = new Date()): Promise<boolean> {
    for (const key of Object.keys(payload)) {
      if (key === '' || key.includes('/') || key.startsWith('..')) {
        throw new Error(`volume key "${key}" is not a file name`);
      }
    }
    await mkdir(this.#dir, { recursive: true, mode: 0o755 });
    const old = await currentVersion(this.#dir);
    if (old !== undefined && (await holds(join(this.#dir, old), payload))) return false;
    const version = await mkdtemp(join(this.#dir, versionPrefix(at)));
    await chmod(version, 0o755);
    for (const [key, file] of Object.entries(payload)) {
      const path = join(version, key);
      await writeFile(path, file.data, { mode: file.mode });
      await chmod(path, file.mode);
      if (this.#group !== undefined) await chown(path, 0, this.#group);
    }
    const tmp = join(this.#dir, DATA_TMP);
    await rm(tmp, { force: true });
    await symlink(version.slice(this.#dir.length + 1), tmp);
    await rename(tmp, join(this.#dir, DATA_LINK));
    const visible = new Set(Object.keys(payload));
    for (const key of visible) {
      await symlink(join(DATA_LINK, key), join(this.#dir, key)).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      });
    }
    for (const name of await readdir(this.#dir)) {
      if (name.startsWith('..') || visible.has(name)) continue;
      await rm(join(this.#dir, name), { force: true });
    }
    if (old !== undefined) await rm(join(this.#dir, old), { recursive: true, force: true });
    return true;
  }
}
