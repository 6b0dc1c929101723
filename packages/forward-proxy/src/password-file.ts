/**
 * The password file of proxy authentication: htpasswd-style `username:hash`
 * lines, the format Squid's `basic_ncsa_auth` reads, and the file watched
 * for changes. Whoever rotates credentials rewrites the file (an atomic
 * rename, or the kubelet's swap of a mounted Secret); the proxy sees the
 * new contents on the next check, at most a second later.
 *
 * @module
 */
import { now as clock } from './clock.js';
import { fs } from './fs.js';

/** What {@link parsePasswordFile} read: username to hash, and the lines it skipped. */
export interface PasswordEntries extends Map<string, string> {
  /**
   * The numbers (from 1) of the lines that were skipped as malformed: no
   * `:`, an empty username or hash, a control character, or a username
   * already given on an earlier line (the first one counts). Only the
   * numbers are kept, never the lines, so saying them shows no hash.
   */
  readonly skippedLines: readonly number[];
}

// Control characters (C0 and DEL): no username or hash holds one.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters it looks for
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Reads a password file's text: one `username:hash` per line (a field
 * after a second `:` is ignored, as `basic_ncsa_auth` does), `#` comments
 * and blank lines ignored, CRLF line ends taken as LF. A malformed line is
 * skipped and its number kept in `skippedLines`.
 */
export function parsePasswordFile(text: string): PasswordEntries {
  const users = new Map<string, string>();
  const skippedLines: number[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/\r$/, '');
    const start = line.trimStart();
    if (start === '' || start.startsWith('#')) continue;
    const colon = line.indexOf(':');
    const user = colon < 0 ? '' : line.slice(0, colon);
    const hash = colon < 0 ? '' : (line.slice(colon + 1).split(':')[0] as string);
    if (user === '' || hash === '' || CONTROL.test(line) || users.has(user)) {
      skippedLines.push(i + 1);
      continue;
    }
    users.set(user, hash);
  }
  return Object.assign(users, { skippedLines });
}

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
