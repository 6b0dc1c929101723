// Peer: none but the file system: the password file's re-reading, and what the proxy's
// authentication keeps of each verification (the clock is passed in). The file's format is
// @proxy-op/htpasswd's, tested there.
import { chmod, chown, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as htpasswd from '@proxy-op/htpasswd';
import { basicAuthorization, replaceFile } from '@proxy-op/testkit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProxyAuth } from '../src/auth.js';
import { now } from '../src/clock.js';
import { hashPassword } from '../src/index.js';
import { RECHECK_MS, readTrusted } from '../src/password-file.js';

vi.mock('@proxy-op/htpasswd', async (actual) => {
  const real = await actual<typeof import('@proxy-op/htpasswd')>();
  return { ...real, verifyPasswordSliced: vi.fn(real.verifyPasswordSliced) };
});

/** The user a check lets in, or undefined; from the source `s` unless another is named. */
async function userOf(
  auth: ProxyAuth,
  header: string | undefined,
  t: number,
  source = 's',
): Promise<string | undefined> {
  const o = await auth.check(header, source, t);
  return o.kind === 'user' ? o.user : undefined;
}

describe('ProxyAuth', () => {
  let dir: string;
  let file: string;
  const warnings: string[] = [];
  const alice = { user: 'alice', password: 'first' };
  const verify = vi.mocked(htpasswd.verifyPasswordSliced);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-passwd-'));
    file = join(dir, 'passwd');
    await writeFile(file, `alice:${hashPassword(alice.password)}\n`);
    warnings.length = 0;
    verify.mockClear();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const make = (ttl = 10_000) =>
    new ProxyAuth({ realm: 'r', passwordFile: file, credentialsTtlMs: ttl }, (m) => {
      warnings.push(m);
    });

  it('verifies a credential once, then keeps the answer for the TTL', async () => {
    const auth = make(10_000);
    const t = now();
    const header = basicAuthorization(alice);
    expect(await userOf(auth, header, t)).toBe('alice');
    expect(await userOf(auth, header, t + 100)).toBe('alice');
    expect(await userOf(auth, header, t + 9_000)).toBe('alice');
    expect(verify).toHaveBeenCalledTimes(1);
    expect(await userOf(auth, header, t + 10_001)).toBe('alice');
    expect(verify).toHaveBeenCalledTimes(2);
    // A refusal is not kept: each one is verified again, and counts against its source.
    const wrong = basicAuthorization({ user: 'alice', password: 'nope' });
    expect(await userOf(auth, wrong, t + 10_002)).toBeUndefined();
    expect(await userOf(auth, wrong, t + 10_003)).toBeUndefined();
    expect(verify).toHaveBeenCalledTimes(4);
  });

  it('drops what it kept for a user whose line changed, at the next look at the file', async () => {
    const auth = make(60_000);
    const t = now();
    const old = basicAuthorization(alice);
    const next = basicAuthorization({ user: 'alice', password: 'second' });
    expect(await userOf(auth, old, t)).toBe('alice');
    expect(await userOf(auth, next, t)).toBeUndefined();
    await replaceFile(file, `alice:${hashPassword('second')}\n`);
    // Looked at no more than once a second: the change is not seen yet.
    expect(await userOf(auth, old, t + RECHECK_MS / 2)).toBe('alice');
    expect(await userOf(auth, old, t + RECHECK_MS + 1)).toBeUndefined();
    expect(await userOf(auth, next, t + RECHECK_MS + 2)).toBe('alice');
  });

  it('keeps what it verified for users whose line did not change', async () => {
    const auth = make(60_000);
    const t = now();
    const header = basicAuthorization(alice);
    expect(await userOf(auth, header, t)).toBe('alice');
    const line = await readFile(file, 'utf8');
    await replaceFile(file, `${line}bob:${hashPassword('b')}\n`);
    expect(await userOf(auth, header, t + RECHECK_MS + 1)).toBe('alice');
    expect(
      await userOf(auth, basicAuthorization({ user: 'bob', password: 'b' }), t + RECHECK_MS + 2),
    ).toBe('bob');
    expect(verify).toHaveBeenCalledTimes(2);
  });

  it('refuses everyone while the file is gone, and says so once, naming only the path', async () => {
    const auth = make(60_000);
    const t = now();
    const header = basicAuthorization(alice);
    expect(await userOf(auth, header, t)).toBe('alice');
    await rm(file);
    expect(await userOf(auth, header, t + RECHECK_MS + 1)).toBeUndefined();
    expect(await userOf(auth, header, t + 2 * RECHECK_MS + 2)).toBeUndefined();
    expect(warnings).toEqual([
      `password file ${file} cannot be read (ENOENT); every request is refused until it can`,
    ]);
  });

  it('says which lines it skipped, without their contents', async () => {
    await writeFile(file, `alice:${hashPassword(alice.password)}\nbroken-line-SECRET\n`);
    make();
    expect(warnings).toEqual([`password file ${file}: skipped malformed lines 2`]);
  });

  it('names the option or the path when it cannot start', async () => {
    expect(
      () => new ProxyAuth({ realm: 'a "quoted" realm', passwordFile: file }, () => {}),
    ).toThrow(/^auth\.realm: /);
    expect(() => new ProxyAuth({ realm: 'line\nbreak', passwordFile: file }, () => {})).toThrow(
      TypeError,
    );
    expect(() => new ProxyAuth({ realm: '', passwordFile: file }, () => {})).toThrow(TypeError);
    expect(
      () => new ProxyAuth({ realm: 'r', passwordFile: file, credentialsTtlMs: -1 }, () => {}),
    ).toThrow(/^auth\.credentialsTtlMs: /);
    const missing = join(dir, 'missing');
    expect(() => new ProxyAuth({ realm: 'r', passwordFile: missing }, () => {})).toThrow(
      `auth.passwordFile: cannot read ${missing} (ENOENT)`,
    );
  });
});

describe('a password file the proxy may trust', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'proxy-op-passwd-trust-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is read through a link (a Secret volume has them), but not when others can write it', async () => {
    const real = join(dir, 'real');
    await writeFile(real, `alice:${hashPassword('secret')}\n`, { mode: 0o600 });
    const link = join(dir, 'passwd');
    await symlink(real, link);
    expect(readTrusted(link)).toContain('alice:');
    await chmod(real, 0o666);
    expect(() => readTrusted(link)).toThrow(`${link} is writable by others`);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'refuses a file another user owns, at start and when it is swapped in later',
    async () => {
      const ours = join(dir, 'passwd');
      await writeFile(ours, `alice:${hashPassword('secret')}\n`, { mode: 0o600 });
      const theirs = join(dir, 'theirs');
      await writeFile(theirs, `mallory:${hashPassword('x')}\n`, { mode: 0o644 });
      await chown(theirs, 65534, 65534);
      // Started on it: refused, naming the file and why.
      const warnings: string[] = [];
      expect(
        () => new ProxyAuth({ realm: 'r', passwordFile: theirs }, (w) => warnings.push(w)),
      ).toThrow('owned by another user');
      // Renamed over ours while the proxy runs: no user at all until it is ours again.
      const auth = new ProxyAuth({ realm: 'r', passwordFile: ours }, (w) => warnings.push(w));
      const t0 = now();
      expect(
        await userOf(auth, basicAuthorization({ user: 'alice', password: 'secret' }), t0),
      ).toBe('alice');
      await rename(theirs, ours);
      expect(
        await userOf(auth, basicAuthorization({ user: 'mallory', password: 'x' }), t0 + RECHECK_MS),
      ).toBeUndefined();
      expect(warnings.join('\n')).toContain('owned by another user');
    },
  );
});
