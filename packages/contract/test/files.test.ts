// Peer: the real file system: folders and files in a fresh temp folder per test, another user's
// files made with chown (as root; those cases are skipped, with the reason printed, otherwise);
// the cross-copy test loads a second copy of the built entry from a temp folder.
import { execFileSync } from 'node:child_process';
import {
  chmod,
  chown,
  cp,
  link,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  checkPrivateFolder,
  ensurePrivateFolder,
  openOwnedFile,
  readOwnedFile,
  UnsafePathError,
  writeFileAtomic,
} from '../src/files.js';

/** The user the other-owner cases give files and folders to: `nobody`. */
const OTHER_UID = 65534;
const AS_ROOT = process.getuid?.() === 0;
if (!AS_ROOT) {
  console.warn(
    `skipping the other-user cases of files.test.ts: only root can give a file to user ${OTHER_UID}`,
  );
}

let root = '';
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'contract-files-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const modeOf = async (p: string) => (await lstat(p)).mode & 0o7777;

/** The rejection of `p`, which must be an UnsafePathError. */
async function refusal(p: Promise<unknown>): Promise<UnsafePathError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(UnsafePathError.isInstance(err), String(err)).toBe(true);
  return err as UnsafePathError;
}

describe('ensurePrivateFolder', () => {
  it('creates a missing folder and its parents with mode 0700', async () => {
    const dir = join(root, 'state', 'proxy-op', 'local');
    await ensurePrivateFolder(dir);
    expect(await modeOf(dir)).toBe(0o700);
    expect(await modeOf(join(root, 'state', 'proxy-op'))).toBe(0o700);
    await ensurePrivateFolder(dir);
    expect(await checkPrivateFolder(dir)).toBe(true);
  });

  it('accepts a folder of ours others can read but not write, and leaves its mode', async () => {
    const dir = join(root, 'readable');
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    await ensurePrivateFolder(dir);
    expect(await modeOf(dir)).toBe(0o755);
  });

  it.each([
    [0o777, 'group and others'],
    [0o770, 'its group'],
    [0o1777, 'group and others'],
    [0o703, 'others'],
  ])('refuses a folder of mode %s (writable by %s) without changing it', async (mode, who) => {
    const dir = join(root, 'shared');
    await mkdir(dir);
    await chmod(dir, mode);
    const err = await refusal(ensurePrivateFolder(dir));
    expect(err.code).toBe('FOLDER_WRITABLE_BY_OTHERS');
    expect(err.path).toBe(dir);
    expect(err.message).toContain(`can be written by ${who}`);
    expect(err.message).toContain(`chmod 700 ${dir}`);
    expect(await modeOf(dir)).toBe(mode);
    await expect(checkPrivateFolder(dir)).rejects.toMatchObject({
      code: 'FOLDER_WRITABLE_BY_OTHERS',
    });
  });

  it('refuses a symbolic link to a private folder', async () => {
    const real = join(root, 'real');
    await mkdir(real, { mode: 0o700 });
    const dir = join(root, 'link');
    await symlink(real, dir);
    const err = await refusal(ensurePrivateFolder(dir));
    expect(err.code).toBe('FOLDER_IS_SYMLINK');
    expect(err.message).toContain(dir);
    expect(err.message).toContain('choose another folder');
  });

  it('refuses a file where the folder should be', async () => {
    const dir = join(root, 'file');
    await writeFile(dir, 'x');
    const err = await refusal(ensurePrivateFolder(dir));
    expect(err.code).toBe('NOT_A_FOLDER');
    expect(err.message).toBe(`${dir} is a file, not a folder: remove it or choose another folder`);
  });

  it('checkPrivateFolder reads false for a missing folder and makes nothing', async () => {
    const dir = join(root, 'missing');
    expect(await checkPrivateFolder(dir)).toBe(false);
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('stops before anything when the signal fired', async () => {
    const dir = join(root, 'never');
    await expect(ensurePrivateFolder(dir, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(await checkPrivateFolder(dir)).toBe(false);
  });

  describe.skipIf(!AS_ROOT)('another user', () => {
    it('refuses a folder another user owns, naming it and the fix', async () => {
      const dir = join(root, 'theirs');
      await mkdir(dir, { mode: 0o700 });
      await chown(dir, OTHER_UID, OTHER_UID);
      const err = await refusal(ensurePrivateFolder(dir));
      expect(err.code).toBe('FOLDER_OWNED_BY_OTHER');
      expect(err.message).toBe(
        `folder ${dir} belongs to user ${OTHER_UID}, not to this process's user 0: choose another folder (a folder another user made can hold files they planted)`,
      );
      expect((await lstat(dir)).uid).toBe(OTHER_UID);
    });
  });
});

describe('openOwnedFile', () => {
  it('creates a missing file with mode 0600 and appends to it', async () => {
    const file = join(root, 'a.log');
    for (const line of ['one\n', 'two\n']) {
      const fh = await openOwnedFile(file, 'append');
      await fh.write(line);
      await fh.close();
    }
    expect(await readFile(file, 'utf8')).toBe('one\ntwo\n');
    expect(await modeOf(file)).toBe(0o600);
  });

  it('empties a file opened for writing, and sets a file of ours to 0600', async () => {
    const file = join(root, 'old.log');
    await writeFile(file, 'old contents\n');
    await chmod(file, 0o644);
    const fh = await openOwnedFile(file, 'write');
    await fh.write('new\n');
    await fh.close();
    expect(await readFile(file, 'utf8')).toBe('new\n');
    expect(await modeOf(file)).toBe(0o600);
  });

  it('never writes through a planted symbolic link: its target is untouched', async () => {
    const target = join(root, 'precious');
    await writeFile(target, 'root only\n', { mode: 0o600 });
    const file = join(root, 'instance.log');
    await symlink(target, file);
    for (const mode of ['append', 'write', 'read'] as const) {
      const err = await refusal(openOwnedFile(file, mode));
      expect(err.code).toBe('FILE_IS_SYMLINK');
      expect(err.message).toContain(file);
    }
    expect(await readFile(target, 'utf8')).toBe('root only\n');
    expect(await modeOf(target)).toBe(0o600);
  });

  it('refuses a symbolic link to nowhere instead of creating its target', async () => {
    const target = join(root, 'would-be-created');
    const file = join(root, 'dangling.log');
    await symlink(target, file);
    expect((await refusal(openOwnedFile(file, 'append'))).code).toBe('FILE_IS_SYMLINK');
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a FIFO at once rather than wait for a reader', async () => {
    const file = join(root, 'fifo.log');
    execFileSync('mkfifo', [file]);
    for (const mode of ['append', 'write', 'read'] as const) {
      expect((await refusal(openOwnedFile(file, mode))).code).toBe('NOT_A_REGULAR_FILE');
    }
  });

  it('refuses a folder where the file should be', async () => {
    const file = join(root, 'dir.log');
    await mkdir(file);
    for (const mode of ['append', 'read'] as const) {
      const err = await refusal(openOwnedFile(file, mode));
      expect(err.code).toBe('NOT_A_REGULAR_FILE');
      expect(err.message).toBe(`${file} is a folder, not a regular file: remove it`);
    }
  });

  it('refuses to write a file with another name (a hard link), and leaves both as they were', async () => {
    const other = join(root, 'other');
    await writeFile(other, 'keep\n', { mode: 0o600 });
    const file = join(root, 'linked.log');
    await link(other, file);
    for (const mode of ['append', 'write'] as const) {
      expect((await refusal(openOwnedFile(file, mode))).code).toBe('FILE_HARD_LINKED');
    }
    expect(await readFile(other, 'utf8')).toBe('keep\n');
  });

  it('refuses to read a file group or others can write', async () => {
    const file = join(root, 'open.txt');
    await writeFile(file, 'x');
    await chmod(file, 0o666);
    const err = await refusal(openOwnedFile(file, 'read'));
    expect(err.code).toBe('FILE_WRITABLE_BY_OTHERS');
    expect(err.message).toContain(`chmod 600 ${file}`);
  });

  describe.skipIf(!AS_ROOT)('another user', () => {
    it('refuses a file another user owns, and writes nothing to it', async () => {
      const file = join(root, 'theirs.log');
      await writeFile(file, 'theirs\n', { mode: 0o600 });
      await chown(file, OTHER_UID, OTHER_UID);
      for (const mode of ['append', 'write', 'read'] as const) {
        const err = await refusal(openOwnedFile(file, mode));
        expect(err.code).toBe('FILE_OWNED_BY_OTHER');
        expect(err.message).toContain(`${file} belongs to user ${OTHER_UID}`);
      }
      expect(await readFile(file, 'utf8')).toBe('theirs\n');
      expect(await modeOf(file)).toBe(0o600);
    });
  });
});

describe('writeFileAtomic', () => {
  it('writes a new file with mode 0600 and leaves no temporary file', async () => {
    const file = join(root, 'p.json');
    await writeFileAtomic(file, '{"a":1}\n');
    expect(await readFile(file, 'utf8')).toBe('{"a":1}\n');
    expect(await modeOf(file)).toBe(0o600);
    expect(await readdir(root)).toEqual(['p.json']);
  });

  it('replaces a file by rename: the old one, still open, keeps its contents', async () => {
    const file = join(root, 'p.passwd');
    await writeFileAtomic(file, 'old\n');
    const before = (await stat(file)).ino;
    const reader = await openOwnedFile(file, 'read');
    await writeFileAtomic(file, new TextEncoder().encode('new\n'));
    expect((await stat(file)).ino).not.toBe(before);
    expect(await reader.readFile('utf8')).toBe('old\n');
    await reader.close();
    expect(await readFile(file, 'utf8')).toBe('new\n');
  });

  it('replaces a planted symbolic link instead of writing through it', async () => {
    const target = join(root, 'precious');
    await writeFile(target, 'root only\n');
    const file = join(root, 'p.json');
    await symlink(target, file);
    await writeFileAtomic(file, 'ours\n');
    expect((await lstat(file)).isFile()).toBe(true);
    expect(await readFile(file, 'utf8')).toBe('ours\n');
    expect(await readFile(target, 'utf8')).toBe('root only\n');
  });

  it('gives each write its own temporary file: concurrent writes all land, none is left over', async () => {
    const file = join(root, 'p.json');
    const texts = Array.from({ length: 20 }, (_, i) => `write ${i}\n`);
    await Promise.all(texts.map((t) => writeFileAtomic(file, t)));
    expect(texts).toContain(await readFile(file, 'utf8'));
    expect(await readdir(root)).toEqual(['p.json']);
  });

  it('removes its temporary file when the rename fails, and leaves the target as it was', async () => {
    const file = join(root, 'taken');
    await mkdir(file);
    await writeFile(join(file, 'inside'), 'x');
    await expect(writeFileAtomic(file, 'data')).rejects.toMatchObject({ syscall: 'rename' });
    expect((await readdir(root)).sort()).toEqual(['taken']);
    expect(await readdir(file)).toEqual(['inside']);
  });

  it('removes its temporary file when the signal fires, and leaves the target as it was', async () => {
    const file = join(root, 'p.json');
    await writeFileAtomic(file, 'kept\n');
    const ac = new AbortController();
    const big = new Uint8Array(64 * 1024 * 1024);
    const write = writeFileAtomic(file, big, { signal: ac.signal });
    ac.abort();
    await expect(write).rejects.toMatchObject({ name: 'AbortError' });
    expect(await readFile(file, 'utf8')).toBe('kept\n');
    expect(await readdir(root)).toEqual(['p.json']);
  });

  it('fails in a folder that does not exist, leaving nothing', async () => {
    await expect(writeFileAtomic(join(root, 'no', 'p.json'), 'x')).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect(await readdir(root)).toEqual([]);
  });
});

describe('readOwnedFile', () => {
  it('reads a file of ours up to the bound', async () => {
    const file = join(root, 'm.yaml');
    await writeFileAtomic(file, 'x'.repeat(100));
    expect((await readOwnedFile(file, { maxBytes: 100 })).toString()).toBe('x'.repeat(100));
    expect((await readOwnedFile(join(root, 'm.yaml'), { maxBytes: 1 << 20 })).length).toBe(100);
    await writeFileAtomic(file, '');
    expect((await readOwnedFile(file, { maxBytes: 0 })).length).toBe(0);
  });

  it('refuses a file over the bound, naming it and the bound', async () => {
    const file = join(root, 'big.yaml');
    await writeFileAtomic(file, 'x'.repeat(101));
    const err = await refusal(readOwnedFile(file, { maxBytes: 100 }));
    expect(err.code).toBe('FILE_TOO_LARGE');
    expect(err.message).toBe(`file ${file} is 101 bytes, over the bound of 100`);
  });

  it('does not follow a symbolic link, even with anyOwner', async () => {
    const target = join(root, 'secret');
    await writeFile(target, 'secret\n', { mode: 0o600 });
    const file = join(root, 'm.yaml');
    await symlink(target, file);
    for (const anyOwner of [false, true]) {
      const err = await refusal(readOwnedFile(file, { maxBytes: 1024, anyOwner }));
      expect(err.code).toBe('FILE_IS_SYMLINK');
    }
  });

  it('reads a file others can write only with anyOwner', async () => {
    const file = join(root, 'shared.yaml');
    await writeFile(file, 'kind: Proxy\n');
    await chmod(file, 0o664);
    expect((await refusal(readOwnedFile(file, { maxBytes: 1024 }))).code).toBe(
      'FILE_WRITABLE_BY_OTHERS',
    );
    expect((await readOwnedFile(file, { maxBytes: 1024, anyOwner: true })).toString()).toBe(
      'kind: Proxy\n',
    );
  });

  it('rejects a missing file with ENOENT', async () => {
    await expect(readOwnedFile(join(root, 'none'), { maxBytes: 1 })).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('takes a bound that is a non-negative integer', async () => {
    await expect(readOwnedFile(join(root, 'x'), { maxBytes: -1 })).rejects.toThrow(TypeError);
  });

  describe.skipIf(!AS_ROOT)('another user', () => {
    it('detects a file renamed over ours by another user', async () => {
      const file = join(root, 'p.passwd');
      await writeFileAtomic(file, 'alice:$6$ours\n');
      const planted = join(root, 'planted');
      await writeFile(planted, 'mallory:$6$theirs\n', { mode: 0o600 });
      await chown(planted, OTHER_UID, OTHER_UID);
      await rename(planted, file);
      const err = await refusal(readOwnedFile(file, { maxBytes: 1024 }));
      expect(err.code).toBe('FILE_OWNED_BY_OTHER');
      expect(err.message).not.toContain('mallory');
      expect((await refusal(openOwnedFile(file, 'append'))).code).toBe('FILE_OWNED_BY_OTHER');
      // A reader that trusts any owner (a manifest) still gets it, links aside.
      expect((await readOwnedFile(file, { maxBytes: 1024, anyOwner: true })).toString()).toContain(
        'mallory',
      );
      // Writing ours again replaces theirs.
      await writeFileAtomic(file, 'alice:$6$ours\n');
      expect((await readOwnedFile(file, { maxBytes: 1024 })).toString()).toBe('alice:$6$ours\n');
    });
  });
});

describe('UnsafePathError', () => {
  it('is branded, with a stable code and the path', () => {
    const err = new UnsafePathError('FILE_TOO_LARGE', '/x', 'too large');
    expect(err.name).toBe('UnsafePathError');
    expect(UnsafePathError.isInstance(err)).toBe(true);
    expect(UnsafePathError.isInstance(new Error('x'))).toBe(false);
    expect(UnsafePathError.isInstance({ code: 'FILE_TOO_LARGE' })).toBe(false);
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      name: 'UnsafePathError',
      code: 'FILE_TOO_LARGE',
      path: '/x',
      message: 'too large',
    });
  });

  it('is recognised from a second installed copy of the package', async () => {
    const dist = fileURLToPath(new URL('../dist', import.meta.url));
    await cp(dist, join(root, 'dist'), { recursive: true });
    const copy = (await import(
      pathToFileURL(join(root, 'dist', 'files.js')).href
    )) as typeof import('../src/files.js');
    expect(copy.UnsafePathError).not.toBe(UnsafePathError);
    const foreign = new copy.UnsafePathError('FILE_IS_SYMLINK', '/x', 'link');
    expect(foreign instanceof UnsafePathError).toBe(false);
    expect(UnsafePathError.isInstance(foreign)).toBe(true);
  });
});
