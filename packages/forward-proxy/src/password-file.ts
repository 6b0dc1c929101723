/**
 * The password file of proxy authentication, watched for changes; its
 * htpasswd-style `username:hash` lines are read by `@proxy-op/htpasswd`.
 * Whoever rotates credentials rewrites the file (an atomic rename, or the
 * kubelet's swap of a mounted Secret); the proxy sees the new contents on
 * the next check, at most a second later.
 *
 * @module
 */
import { type PasswordEntries, parsePasswordFile } from '@proxy-op/htpasswd';
import { now as clock } from './clock.js';
import { fs } from './fs.js';

/**
 * The file's text, if it is one this process may trust: a regular file (a
 * link is followed, as a Kubernetes Secret volume has them) owned by this
 * user or by root, that others cannot write. Judged on the file opened, so
 * nothing can be swapped in between; throws a `EPERM` error naming why.
 */
export function readTrusted(path: string): string {
  const fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const st = fs.fstatSync(fd);
    const uid = process.getuid?.();
    const why = !st.isFile()
      ? 'not a regular file'
      : uid !== undefined && st.uid !== uid && st.uid !== 0
        ? 'owned by another user'
        : (st.mode & 0o002) !== 0
          ? 'writable by others'
          : undefined;
    if (why !== undefined) throw new Error(`${path} is ${why}`);
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** How often the file is looked at, at most, in ms. */
export const RECHECK_MS = 1_000;

/** What identifies one version of a file: device, inode, size, modification and change times. */
export function fileStamp(path: string): string {
  const s = fs.statSync(path, { bigint: true });
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/** Why a file could not be read, without its contents: the error's code, or its message. */
export function whyUnreadable(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' ? code : String((err as Error).message);
}

/**
 * A password file read at start and again whenever it has changed (its
 * inode, size or times differ), looked at on demand at most once per
 * {@link RECHECK_MS}. A file that vanishes or cannot be read leaves no
 * users at all, until it is back.
 */
export class WatchedPasswordFile {
  readonly path: string;
  #stamp: string | undefined;
  #users: PasswordEntries | undefined;
  #checkedAt: number;
  readonly #warn: (message: string) => void;
  readonly #changed: (users: ReadonlyMap<string, string> | undefined) => void;

  /**
   * Reads `path`; throws an `Error` naming it when it cannot be read.
   * `warn` is told (with the path and line numbers only) when lines are
   * skipped or the file goes missing; `changed` gets the users each time
   * the file has changed.
   */
  constructor(
    path: string,
    warn: (message: string) => void,
    changed: (users: ReadonlyMap<string, string> | undefined) => void,
  ) {
    this.path = path;
    this.#warn = warn;
    this.#changed = changed;
    this.#checkedAt = clock();
    try {
      this.#stamp = fileStamp(path);
      this.#users = this.#read();
    } catch (err) {
      throw new Error(`auth.passwordFile: cannot read ${path} (${whyUnreadable(err)})`);
    }
  }

  /** The users now (username to hash), or undefined while the file cannot be read. */
  users(now: number = clock()): ReadonlyMap<string, string> | undefined {
    if (now - this.#checkedAt >= RECHECK_MS) this.#recheck(now);
    return this.#users;
  }

  #read(): PasswordEntries {
    const users = parsePasswordFile(readTrusted(this.path));
    if (users.skippedLines.length > 0) {
      this.#warn(
        `password file ${this.path}: skipped malformed lines ${users.skippedLines.join(', ')}`,
      );
    }
    return users;
  }

  #recheck(now: number): void {
    this.#checkedAt = now;
    let next: string;
    try {
      next = fileStamp(this.path);
      if (next === this.#stamp) return;
      const users = this.#read();
      this.#stamp = next;
      this.#users = users;
    } catch (err) {
      if (this.#stamp === undefined) return; // still missing: said already
      this.#stamp = undefined;
      this.#users = undefined;
      this.#warn(
        `password file ${this.path} cannot be read (${whyUnreadable(err)}); every request is refused until it can`,
      );
    }
    this.#changed(this.#users);
  }
}
