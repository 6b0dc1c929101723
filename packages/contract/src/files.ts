/**
 * Files a process owns: a private folder (ours, written by nobody else),
 * files opened without following links, written atomically, and read with
 * a size bound. What another local user could plant in a shared place (a
 * folder made first with mode 0777, a symbolic link named like our log, a
 * file renamed over ours) is refused with an {@link UnsafePathError} that
 * names the path and the fix, never written through or trusted.
 *
 * Node's `fs` alone. On a system without user ids (`process.getuid`
 * missing: Windows) the owner checks are skipped.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND } = constants;
// Missing on Windows, where there is nothing of the kind to refuse.
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
// A FIFO planted under our name would make an open for writing wait for a reader; with it, the
// open fails at once (ENXIO) or returns, and the file's type is checked.
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** What an {@link UnsafePathError} refused. Codes are API: they never change within a major. */
export type UnsafePathCode =
  /** The folder belongs to another user. */
  | 'FOLDER_OWNED_BY_OTHER'
  /** Group or others can write in the folder (mode & 0o022). */
  | 'FOLDER_WRITABLE_BY_OTHERS'
  /** The folder's path is a symbolic link. */
  | 'FOLDER_IS_SYMLINK'
  /** The path is something else than a folder. */
  | 'NOT_A_FOLDER'
  /** The file belongs to another user. */
  | 'FILE_OWNED_BY_OTHER'
  /** Group or others can write the file (mode & 0o022), so its contents cannot be trusted. */
  | 'FILE_WRITABLE_BY_OTHERS'
  /** The file's path is a symbolic link. */
  | 'FILE_IS_SYMLINK'
  /** The path is something else than a regular file (a folder, a FIFO, a socket, a device). */
  | 'NOT_A_REGULAR_FILE'
  /** The file to write has other names (hard links): writing it would write them too. */
  | 'FILE_HARD_LINKED'
  /** The file is larger than the reader's bound. */
  | 'FILE_TOO_LARGE';

const BRAND = Symbol.for('@proxy-op/contract.UnsafePathError');

/**
 * A path refused as unsafe: its `code` says why, its `path` is the path,
 * and its message names the path and the fix. Check for it with
 * {@link UnsafePathError.isInstance} (works across two installed copies of
 * the contract) rather than `instanceof`.
 */
export class UnsafePathError extends Error {
  /** Why the path was refused. */
  readonly code: UnsafePathCode;
  /** The path refused. */
  readonly path: string;

  constructor(code: UnsafePathCode, path: string, message: string) {
    super(message);
    this.code = code;
    this.path = path;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** Always `UnsafePathError`. */
  override get name(): string {
    return 'UnsafePathError';
  }

  /** True for an UnsafePathError from any copy of this package. */
  static isInstance(value: unknown): value is UnsafePathError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[BRAND] === true
    );
  }

  /** A plain object for structured logs: no stack. */
  toJSON(): Record<string, string> {
    return { name: this.name, code: this.code, path: this.path, message: this.message };
  }
}

/** Options of every call: the signal stops it between its steps. */
export interface FileOptions {
  /** Rejects with the signal's reason once it fired; a temporary file made meanwhile is removed. */
  readonly signal?: AbortSignal | undefined;
}

/** Options of {@link readOwnedFile}. */
export interface ReadOptions extends FileOptions {
  /** The largest file accepted, in bytes; a larger one is `FILE_TOO_LARGE`. */
  readonly maxBytes: number;
  /**
   * Accept a file of any owner, and one that group or others can write (a
   * manifest in a shared checkout); links are still not followed. Default
   * false: the file must be ours and written by nobody else.
   */
  readonly anyOwner?: boolean | undefined;
}

/** How {@link openOwnedFile} opens a file. */
export type OpenMode = 'read' | 'append' | 'write';

/** This process's user id, or undefined where the system has none. */
function ourUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

function writers(mode: number): string {
  const group = (mode & 0o020) !== 0;
  const others = (mode & 0o002) !== 0;
  return group && others ? 'group and others' : group ? 'its group' : 'others';
}

function kind(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFile()) return 'a file';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'a device';
}

/** Why the folder `dir` (as `lstat` saw it) is not private, or undefined when it is. */
function folderProblem(dir: string, st: Stats): UnsafePathError | undefined {
  if (st.isSymbolicLink()) {
    return new UnsafePathError(
      'FOLDER_IS_SYMLINK',
      dir,
      `folder ${dir} is a symbolic link, which is not followed: name the folder it points to, or choose another folder`,
    );
  }
  if (!st.isDirectory()) {
    return new UnsafePathError(
      'NOT_A_FOLDER',
      dir,
      `${dir} is ${kind(st)}, not a folder: remove it or choose another folder`,
    );
  }
  const uid = ourUid();
  if (uid !== undefined && st.uid !== uid) {
    return new UnsafePathError(
      'FOLDER_OWNED_BY_OTHER',
      dir,
      `folder ${dir} belongs to user ${st.uid}, not to this process's user ${uid}: choose another folder (a folder another user made can hold files they planted)`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    return new UnsafePathError(
      'FOLDER_WRITABLE_BY_OTHERS',
      dir,
      `folder ${dir} can be written by ${writers(st.mode)} (mode ${octal(st.mode)}): check what is in it and run \`chmod 700 ${dir}\`, or choose another folder`,
    );
  }
  return undefined;
}

/**
 * Checks that `dir` is a private folder: a folder (not a symbolic link to
 * one) that this process's user owns and that neither its group nor others
 * can write. Resolves true when it is, false when nothing is there; throws
 * an {@link UnsafePathError} naming the folder and the fix otherwise. It
 * never changes the folder.
 */
export async function checkPrivateFolder(dir: string, options?: FileOptions): Promise<boolean> {
  options?.signal?.throwIfAborted();
  let st: Stats;
  try {
    st = await lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  const problem = folderProblem(dir, st);
  if (problem !== undefined) throw problem;
  return true;
}

/**
 * Makes sure `dir` is a private folder ({@link checkPrivateFolder}): one
 * that is missing is created with mode 0700 (its missing parents too), and
 * then checked like any other, so a folder someone else made in between is
 * refused. An existing folder is never changed: one that fails the check
 * is refused with the fix in the message (`chmod 700 DIR`, or another
 * folder), not repaired behind its owner's back.
 */
export async function ensurePrivateFolder(dir: string, options?: FileOptions): Promise<void> {
  if (await checkPrivateFolder(dir, options)) return;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (!(await checkPrivateFolder(dir, options))) {
    throw Object.assign(new Error(`ENOENT: folder ${dir} vanished as it was made`), {
      code: 'ENOENT',
      syscall: 'mkdir',
      path: dir,
    });
  }
}

/** The typed error for an open that failed on what is at `path`, or undefined (then rethrow). */
async function openProblem(path: string): Promise<UnsafePathError | undefined> {
  let st: Stats;
  try {
    st = await lstat(path);
  } catch {
    return undefined;
  }
  if (st.isSymbolicLink()) {
    return new UnsafePathError(
      'FILE_IS_SYMLINK',
      path,
      `file ${path} is a symbolic link, which is not followed: remove it (someone may have planted it)`,
    );
  }
  if (!st.isFile()) return notRegular(path, st);
  return undefined;
}

function notRegular(path: string, st: Stats): UnsafePathError {
  return new UnsafePathError(
    'NOT_A_REGULAR_FILE',
    path,
    `${path} is ${kind(st)}, not a regular file: remove it`,
  );
}

/** Why the open file (as `fstat` saw it) must not be used, or undefined. */
function fileProblem(
  path: string,
  st: Stats,
  mode: OpenMode,
  anyOwner: boolean,
): UnsafePathError | undefined {
  if (!st.isFile()) return notRegular(path, st);
  if (anyOwner) return undefined;
  const uid = ourUid();
  if (uid !== undefined && st.uid !== uid) {
    return new UnsafePathError(
      'FILE_OWNED_BY_OTHER',
      path,
      `file ${path} belongs to user ${st.uid}, not to this process's user ${uid}: remove it (someone may have put it in place of ours)`,
    );
  }
  if (mode !== 'read' && st.nlink > 1) {
    return new UnsafePathError(
      'FILE_HARD_LINKED',
      path,
      `file ${path} has ${st.nlink} names (hard links), which would be written too: remove it`,
    );
  }
  if (mode === 'read' && (st.mode & 0o022) !== 0) {
    return new UnsafePathError(
      'FILE_WRITABLE_BY_OTHERS',
      path,
      `file ${path} can be written by ${writers(st.mode)} (mode ${octal(st.mode)}), so it is not trusted: check it and run \`chmod 600 ${path}\`, or remove it`,
    );
  }
  return undefined;
}

const OPEN_FLAGS: Readonly<Record<OpenMode, number>> = {
  read: O_RDONLY,
  append: O_WRONLY | O_APPEND | O_CREAT,
  write: O_WRONLY | O_CREAT,
};

async function openChecked(
  path: string,
  mode: OpenMode,
  anyOwner: boolean,
  options: FileOptions | undefined,
): Promise<FileHandle> {
  options?.signal?.throwIfAborted();
  let fh: FileHandle;
  try {
    fh = await open(path, OPEN_FLAGS[mode] | O_NOFOLLOW | O_NONBLOCK, 0o600);
  } catch (err) {
    throw (await openProblem(path)) ?? err;
  }
  try {
    const st = await fh.stat();
    const problem = fileProblem(path, st, mode, anyOwner);
    if (problem !== undefined) throw problem;
    if (mode !== 'read' && (st.mode & 0o077) !== 0) await fh.chmod(0o600);
    if (mode === 'write') await fh.truncate(0);
    options?.signal?.throwIfAborted();
    return fh;
  } catch (err) {
    await fh.close().catch(() => {});
    throw err;
  }
}

/**
 * Opens `path` without following a symbolic link at it (`O_NOFOLLOW`):
 *
 * - `read`: an existing regular file of ours that neither group nor others
 *   can write;
 * - `append`: created with mode 0600 when missing (`O_CREAT`), written at its end;
 * - `write`: the same, emptied once it has passed the checks (never before).
 *
 * A file that exists must be a regular file this process's user owns,
 * with no other name (hard link) when it is opened to be written; one
 * of ours with a wider mode is set to 0600. Anything else is an
 * {@link UnsafePathError} naming the file, and nothing is written to it.
 * The caller closes the handle.
 */
export function openOwnedFile(
  path: string,
  mode: OpenMode,
  options?: FileOptions,
): Promise<FileHandle> {
  return openChecked(path, mode, false, options);
}

/**
 * Reads `path` whole, without following a symbolic link at it: a regular
 * file of at most `maxBytes` bytes (`FILE_TOO_LARGE` otherwise, even when
 * it grows while read) that, unless `anyOwner`, this process's user owns
 * and nobody else can write. A missing file rejects with Node's `ENOENT`.
 */
export async function readOwnedFile(path: string, options: ReadOptions): Promise<Buffer> {
  const { maxBytes } = options;
  if (!Number.isInteger(maxBytes) || maxBytes < 0) {
    throw new TypeError('maxBytes: must be a non-negative integer');
  }
  const fh = await openChecked(path, 'read', options.anyOwner === true, options);
  try {
    const tooLarge = (size: string) =>
      new UnsafePathError(
        'FILE_TOO_LARGE',
        path,
        `file ${path} is ${size} bytes, over the bound of ${maxBytes}`,
      );
    const { size } = await fh.stat();
    if (size > maxBytes) throw tooLarge(String(size));
    // Room for one byte more than the file had, so a file that grew since is read on (up to
    // one byte past the bound, which is how one that grew past it is caught).
    let buf = Buffer.alloc(size + 1);
    let got = 0;
    for (;;) {
      options.signal?.throwIfAborted();
      if (got === buf.length) {
        const grown = Buffer.alloc(Math.min(buf.length * 2, maxBytes + 1));
        buf.copy(grown, 0, 0, got);
        buf = grown;
      }
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got > maxBytes) throw tooLarge(`more than ${maxBytes}`);
    }
    return buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/**
 * Replaces `path` with `data` atomically: a temporary file is created in
 * the same folder under a random name, exclusively (`O_EXCL`, so nothing
 * planted there is ever opened) and with mode 0600, written, flushed to
 * disk (`fsync`), and renamed over `path`; readers see the old file or the
 * new one, never a part. Whatever is at `path` (a symbolic link included)
 * is replaced, not written through. On any failure, or when the signal
 * fires, the temporary file is removed and `path` is left as it was.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options?: FileOptions,
): Promise<void> {
  const signal = options?.signal;
  signal?.throwIfAborted();
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString('hex')}.tmp`);
  const fh = await open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  let closed = false;
  try {
    await fh.writeFile(data, { signal });
    await fh.sync();
    closed = true;
    await fh.close();
    signal?.throwIfAborted();
    await rename(tmp, path);
  } catch (err) {
    if (!closed) await fh.close().catch(() => {});
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
}
