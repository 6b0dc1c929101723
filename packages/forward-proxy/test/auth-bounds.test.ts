// Peer: none but the file system: what a credential check may cost, and how often one source may
// fail it (the clock is passed in; the verification is the real one, counted by a spy).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as htpasswd from '@proxy-op/htpasswd';
import { basicAuthorization } from '@proxy-op/testkit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AuthOutcome, MAX_VERIFYING, ProxyAuth } from '../src/auth.js';
import { FailureLimit } from '../src/auth-limit.js';
import { now } from '../src/clock.js';
import { hashPassword } from '../src/index.js';

vi.mock('@proxy-op/htpasswd', async (actual) => {
  const real = await actual<typeof import('@proxy-op/htpasswd')>();
  return { ...real, verifyPasswordSliced: vi.fn(real.verifyPasswordSliced) };
});

const verify = vi.mocked(htpasswd.verifyPasswordSliced);
const alice = { user: 'alice', password: 'first' };
let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forward-proxy-auth-bounds-'));
  file = join(dir, 'passwd');
  await writeFile(file, `alice:${hashPassword(alice.password)}\n`);
  verify.mockClear();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const make = (
  bounds = { maxAuthorizationBytes: 1024, maxAuthFailures: 3, authFailureRefillMs: 1_000 },
) => new ProxyAuth({ realm: 'r', passwordFile: file }, () => {}, bounds);

const kind = async (o: AuthOutcome | Promise<AuthOutcome>) => (await o).kind;

describe('what a check may cost', () => {
  it('refuses a header longer than the bound without verifying it', async () => {
    const auth = make();
    const long = basicAuthorization({ user: 'alice', password: 'x'.repeat(800) });
    expect(long.length).toBeGreaterThan(1024);
    const o = auth.check(long, 's', now());
    expect(o).not.toBeInstanceOf(Promise);
    expect(await kind(o)).toBe('refused');
    expect(verify).not.toHaveBeenCalled();
    // Just under the bound, it is verified.
    const under = basicAuthorization({ user: 'alice', password: 'x'.repeat(700) });
    expect(under.length).toBeLessThanOrEqual(1024);
    expect(await kind(auth.check(under, 's', now()))).toBe('refused');
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it('verifies an unknown user against a stand-in hash, as costly as a known one', async () => {
    const auth = make();
    const t = now();
    expect(
      await kind(auth.check(basicAuthorization({ user: 'nobody', password: 'p' }), 's', t)),
    ).toBe('refused');
    expect(
      await kind(auth.check(basicAuthorization({ user: 'alice', password: 'p' }), 's', t)),
    ).toBe('refused');
    expect(verify).toHaveBeenCalledTimes(2);
    const [unknownHash, knownHash] = verify.mock.calls.map((c) => c[1]);
    // Both SHA-512-crypt with the default rounds: the same work.
    expect(unknownHash).toMatch(/^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/);
    expect(knownHash).toMatch(/^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/);
  });

  it('is answered at once, without verifying, once the credential was verified', async () => {
    const auth = make();
    const header = basicAuthorization(alice);
    expect(await kind(auth.check(header, 's', now()))).toBe('user');
    const again = auth.check(header, 's', now());
    expect(again).toEqual({ kind: 'user', user: 'alice', params: {} });
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it('runs one verification per header at once, and no more than the bound of them', async () => {
    const auth = make({
      maxAuthorizationBytes: 1024,
      maxAuthFailures: 1000,
      authFailureRefillMs: 1,
    });
    const t = now();
    const header = basicAuthorization(alice);
    const same = [auth.check(header, 'a', t), auth.check(header, 'b', t)];
    expect(verify).toHaveBeenCalledTimes(1);
    const others = Array.from({ length: MAX_VERIFYING + 1 }, (_, i) =>
      auth.check(basicAuthorization({ user: 'alice', password: `w${i}` }), 'c', t),
    );
    const kinds = await Promise.all(others.map(kind));
    expect(kinds.filter((k) => k === 'busy')).toHaveLength(2); // one slot is the shared one's
    expect(await Promise.all(same.map(kind))).toEqual(['user', 'user']);
  });
});

describe('failed checks per source', () => {
  it('are bounded: a source past its burst gets 429 until its bucket refills; others are served', async () => {
    const auth = make();
    const t = now();
    const wrong = basicAuthorization({ user: 'alice', password: 'wrong' });
    for (let i = 0; i < 3; i++)
      expect(await kind(auth.check(wrong, 'attacker', t))).toBe('refused');
    const limited = auth.check(wrong, 'attacker', t + 10);
    expect(limited).toEqual({ kind: 'limited', retryAfterMs: 990 });
    // Even the right credential waits: nothing from that source is verified meanwhile.
    expect(await kind(auth.check(basicAuthorization(alice), 'attacker', t + 20))).toBe('limited');
    expect(verify).toHaveBeenCalledTimes(3);
    // Another source is not affected.
    expect(await kind(auth.check(basicAuthorization(alice), 'client', t + 30))).toBe('user');
    // One failure is forgiven each refill interval.
    expect(await kind(auth.check(wrong, 'attacker', t + 1_001))).toBe('refused');
    expect(await kind(auth.check(wrong, 'attacker', t + 1_002))).toBe('limited');
  });

  it('lets a credential that held be verified again when its time is up, even from a bounded source', async () => {
    const auth = new ProxyAuth(
      { realm: 'r', passwordFile: file, credentialsTtlMs: 100 },
      () => {},
      {
        maxAuthorizationBytes: 1024,
        maxAuthFailures: 1,
        authFailureRefillMs: 60_000,
      },
    );
    const t = now();
    const right = basicAuthorization(alice);
    expect(await kind(auth.check(right, 'shared', t))).toBe('user');
    expect(
      await kind(auth.check(basicAuthorization({ user: 'x', password: 'y' }), 'shared', t)),
    ).toBe('refused');
    expect(
      await kind(auth.check(basicAuthorization({ user: 'x', password: 'z' }), 'shared', t)),
    ).toBe('limited');
    // Past its TTL, the credential that held is verified again, not refused with the source.
    expect(await kind(auth.check(right, 'shared', t + 200))).toBe('user');
    expect(verify).toHaveBeenCalledTimes(3);
  });

  it('charges one token for a header checked by many requests at once', async () => {
    const auth = make();
    const t = now();
    const right = basicAuthorization(alice);
    const many = Array.from({ length: 30 }, () => auth.check(right, 'one-source', t));
    expect(await Promise.all(many.map(kind))).toEqual(Array(30).fill('user'));
    expect(verify).toHaveBeenCalledTimes(1);
    const wrong = basicAuthorization({ user: 'alice', password: 'wrong' });
    const failing = Array.from({ length: 30 }, () => auth.check(wrong, 'one-source', t));
    expect(await Promise.all(failing.map(kind))).toEqual(Array(30).fill('refused'));
    // One failure counted, not thirty: two more tries before the source is bounded.
    expect(
      await kind(auth.check(basicAuthorization({ ...alice, password: 'x' }), 'one-source', t)),
    ).toBe('refused');
  });

  it('counts malformed and overlong credentials, not missing ones', async () => {
    const auth = make();
    const t = now();
    for (let i = 0; i < 5; i++) expect(await kind(auth.check(undefined, 'x', t))).toBe('refused');
    expect(await kind(auth.check('Basic !!!', 'x', t))).toBe('refused');
    expect(await kind(auth.check('Bearer abc', 'x', t))).toBe('refused');
    expect(await kind(auth.check(`Basic ${'A'.repeat(2000)}`, 'x', t))).toBe('refused');
    expect(await kind(auth.check('Basic !!!', 'x', t))).toBe('limited');
  });

  it('a success gives its token back', () => {
    const limit = new FailureLimit(2, 1_000);
    expect(limit.take('s', 0)).toBeUndefined();
    limit.give('s', 0);
    expect(limit.take('s', 0)).toBeUndefined();
    expect(limit.take('s', 0)).toBeUndefined();
    expect(limit.take('s', 0)).toBe(1_000);
    expect(limit.take('s', 500)).toBe(500);
    expect(limit.take('s', 1_000)).toBeUndefined();
    // A full bucket is forgotten: memory is held only for sources that failed lately.
    limit.give('s', 5_000);
    expect(limit.size).toBe(0);
  });
});
