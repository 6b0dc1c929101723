// Peers: the system's crypt(3) through its recorded answers (test/fixtures/crypt-vectors.ts), and
// Squid's real password helper, /usr/lib/squid/basic_ncsa_auth, reading hashes made here.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AWKWARD_PASSWORDS, NCSA_HELPER } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { hashPassword, verifyPassword, verifyPasswordSliced } from '../src/index.js';
import { CRYPT_VECTORS } from './fixtures/crypt-vectors.js';

const { describe, expect, it } = vitest;

describe('SHA-crypt', () => {
  it('gives what the system crypt gives, for every recorded setting', () => {
    for (const [password, hash] of CRYPT_VECTORS) {
      expect(verifyPassword(password, hash), hash).toBe(true);
      if (!hash.startsWith('$6$')) continue;
      const [, , third, fourth] = hash.split('$');
      const rounds = third?.startsWith('rounds=') ? Number(third.slice(7)) : undefined;
      const salt = rounds === undefined ? third : fourth;
      expect(hashPassword(password, { salt, rounds })).toBe(hash);
    }
  });

  it('refuses a wrong password, and takes bytes as well as strings', () => {
    for (const [password, hash] of CRYPT_VECTORS) {
      expect(verifyPassword(`${password}x`, hash)).toBe(false);
      expect(verifyPassword(Buffer.from(password, 'utf8'), hash)).toBe(true);
    }
  });

  it('makes a $6$ hash with a fresh 16-character salt each time', () => {
    const a = hashPassword('secret');
    const b = hashPassword('secret');
    expect(a).toMatch(/^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/);
    expect(a).not.toBe(b);
    expect(verifyPassword('secret', a)).toBe(true);
    expect(verifyPassword('secret', b)).toBe(true);
  });

  it('names its rounds when given, and refuses what crypt refuses', () => {
    expect(hashPassword('pw', { salt: 'ab', rounds: 1000 })).toMatch(/^\$6\$rounds=1000\$ab\$/);
    expect(() => hashPassword('pw', { rounds: 999 })).toThrow(RangeError);
    expect(() => hashPassword('pw', { rounds: 1e9 })).toThrow(RangeError);
    expect(() => hashPassword('pw', { rounds: 1000.5 })).toThrow(RangeError);
    expect(() => hashPassword('pw', { salt: 'a:b' })).toThrow(RangeError);
    // A salt past 16 characters is cut, as crypt cuts it.
    expect(hashPassword('pw', { salt: 'abcdefghijklmnopqrst' })).toMatch(
      /^\$6\$abcdefghijklmnop\$/,
    );
  });

  it('is false, never a throw, for a hash it cannot read', () => {
    const good = CRYPT_VECTORS.find(([p]) => p === 'pw')?.[1] as string;
    const bad = [
      '',
      'pw',
      '$1$salt$abcdefghijklmnopqrstuv', // MD5-crypt
      '$2b$10$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz012', // bcrypt
      'abJnggxhB/yWI', // DES
      good.slice(0, -1),
      `${good}x`,
      good.replace('$salt$', '$sa:lt$'),
      good.replace('$6$', '$6$rounds=999$'),
      good.replace('$6$', '$6$rounds=01000$'),
      good.replace('$6$', '$6$rounds=$'),
      `${good.slice(0, -1)}!`,
    ];
    for (const hash of bad) expect(verifyPassword('pw', hash), hash).toBe(false);
  });
});

describe('verifyPasswordSliced', () => {
  it('answers what verifyPassword answers, for every recorded setting and for bad hashes', async () => {
    for (const [password, hash] of CRYPT_VECTORS) {
      await expect(verifyPasswordSliced(password, hash), hash).resolves.toBe(true);
      await expect(verifyPasswordSliced(`${password}x`, hash), hash).resolves.toBe(false);
    }
    await expect(verifyPasswordSliced('pw', '$1$salt$abcdefghijklmnopqrstuv')).resolves.toBe(false);
    await expect(verifyPasswordSliced('pw', '')).resolves.toBe(false);
  });

  it('hands the event loop back between slices of a costly check', async () => {
    const hash = hashPassword('slow', { salt: 'slices', rounds: 50_000 });
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      await expect(verifyPasswordSliced('slow', hash, 1)).resolves.toBe(true);
    } finally {
      clearInterval(ticker);
    }
    // 50,000 rounds take tens of milliseconds; the timer ran between the slices.
    expect(turns).toBeGreaterThan(1);
  });
});

/** Asks the real helper about each `user password` pair, URL-escaped as Squid sends them. */
async function askHelper(
  file: string,
  pairs: readonly (readonly [string, string])[],
): Promise<string[]> {
  const child = spawn(NCSA_HELPER, [file], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  // Squid (3.4 and later) sends the user and the password URL-escaped, separated by a space.
  for (const [user, password] of pairs) {
    child.stdin.write(`${encodeURIComponent(user)} ${encodeURIComponent(password)}\n`);
  }
  child.stdin.end();
  await exited;
  return out
    .trimEnd()
    .split('\n')
    .map((line) => line.split(' ')[0] as string);
}

function helperMissing(): boolean {
  try {
    accessSync(NCSA_HELPER, constants.X_OK);
    return false;
  } catch {
    return true;
  }
}

describe.skipIf(helperMissing() && process.env.CI !== 'true')(
  'the real basic_ncsa_auth accepts the hashes',
  () => {
    it('accepts the right password and refuses a wrong one, for awkward passwords too', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'htpasswd-crypt-'));
      try {
        const users = AWKWARD_PASSWORDS.map((password, i) => [`user${i}`, password] as const);
        const file = join(dir, 'passwd');
        await writeFile(
          file,
          users.map(([u, p]) => `${u}:${hashPassword(p)}\n`).join('') +
            `sha256:${CRYPT_VECTORS.find(([p, h]) => p === 'pw' && h.startsWith('$5$'))?.[1]}\n` +
            `rounds:${hashPassword('pw', { rounds: 1234 })}\n`,
        );
        const answers = await askHelper(file, [
          ...users,
          ...users.map(([u, p]) => [u, `${p}!`] as const),
          ['sha256', 'pw'],
          ['rounds', 'pw'],
          ['nobody', 'pw'],
        ]);
        expect(answers).toEqual([
          ...users.map(() => 'OK'),
          ...users.map(() => 'ERR'),
          'OK',
          'OK',
          'ERR',
        ]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  },
);
