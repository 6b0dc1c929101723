/**
 * The proxy credentials section of the conformance suite (§2.1, §4.20):
 * what a Create's password file lets in, and its rotation in place with
 * `updateAuth`.
 *
 * @module
 */
import { type CreateRequest, credentialRotationOf, type ProxyAuth } from '@proxy-op/contract';
import { hashPassword } from '@proxy-op/htpasswd';
import type { BackendHarness } from '../harness.js';
import {
  abortWhileBlocked,
  type ConformanceOptions,
  collect,
  counts,
  everythingIn,
  expectGone,
  leakedIn,
  outcome,
  rejection,
  required,
  type TestContext,
  test,
} from '../support.js';

/** A user and password, as `acceptsCredential` takes them. */
type Credential = Parameters<NonNullable<BackendHarness['acceptsCredential']>>[1];

/** The realm of every request of the section (a realm is not changed in place). */
const REALM = 'proxy-op conformance';
/** Passwords with the characters that need escaping somewhere: in a URL, a header, the file. */
const OLD: Credential = { username: 'ct-old', password: 'old $:@% pässword 1' };
const NEW: Credential = { username: 'ct-new', password: 'new-9f2c ünï:@$ 2' };
/** A user no file of the section holds. */
const STRANGER: Credential = { username: 'ct-stranger', password: 'not-in-any-file' };

/** The password file of `credentials`, with the digest of each hash (what must never leak). */
function passwordFile(...credentials: Credential[]): { auth: ProxyAuth; digests: string[] } {
  // 1000 rounds, the fewest SHA-512-crypt allows: a check through the proxy stays quick.
  const hashes = credentials.map((c) => hashPassword(c.password, { rounds: 1000 }));
  const text = credentials.map((c, i) => `${c.username}:${hashes[i]}\n`).join('');
  return {
    auth: { realm: REALM, passwordFile: new TextEncoder().encode(text) },
    digests: hashes.map((h) => h.slice(h.lastIndexOf('$') + 1)),
  };
}

/** One expectation of a watch: the proxy answers `want` for `credential`. */
interface Probe {
  readonly credential: Credential;
  readonly want: boolean;
}

/** How a watch ended. */
interface Watched {
  /** Every `reach` probe answered as wanted, in one round. */
  readonly reached: boolean;
  /** The `hold` probe that answered otherwise in some round, if any. */
  readonly broken: Credential | undefined;
  /** How long it watched, in ms. */
  readonly ms: number;
}

/** The section's hooks, each required with a message that names it. */
function hooks(t: TestContext) {
  const accepts = required(
    t.harness.acceptsCredential,
    'the harness implements acceptsCredential (profile.credentialRotation is in-place)',
  );
  const settleMs = t.harness.authSettleMs ?? 30_000;
  /** The first `hold` probe the proxy does not answer as wanted now. */
  const brokenOf = async (id: string, hold: Probe[]) => {
    for (const p of hold) {
      if ((await accepts.call(t.harness, id, p.credential)) !== p.want) return p.credential;
    }
    return undefined;
  };
  /**
   * Asks the harness, round after round (a short pause between rounds), until
   * every `reach` probe answers as wanted, a `hold` probe does not, or
   * `settleMs` has passed. The `hold` probes are asked before each round
   * and once more after the round that reached.
   */
  const watch = async (id: string, reach: Probe[], hold: Probe[] = []): Promise<Watched> => {
    const t0 = performance.now();
    const pause = Math.min(100, Math.max(5, settleMs / 50));
    for (;;) {
      const broken = await brokenOf(id, hold);
      if (broken !== undefined) return { reached: false, broken, ms: performance.now() - t0 };
      let all = true;
      for (const p of reach) {
        if ((await accepts.call(t.harness, id, p.credential)) !== p.want) all = false;
      }
      if (all) {
        const after = await brokenOf(id, hold);
        return { reached: after === undefined, broken: after, ms: performance.now() - t0 };
      }
      const ms = performance.now() - t0;
      if (ms >= settleMs) return { reached: false, broken: undefined, ms };
      await new Promise((r) => setTimeout(r, pause));
    }
  };
  const now = (id: string, c: Credential) => accepts.call(t.harness, id, c);
  return { watch, now, settleMs };
}

function updateAuthOf(t: TestContext) {
  const update = required(
    t.provider.updateAuth,
    'the provider has updateAuth (profile.credentialRotation is in-place)',
  );
  return (id: string, auth: ProxyAuth, opts?: { signal?: AbortSignal }) =>
    update.call(t.provider, id, auth, opts);
}

const ms = (w: Watched) => `${Math.round(w.ms)} ms`;

/**
 * A fresh request of the section with `auth`, its `egress` allowing the
 * harness's `credentialOrigin` (when it has one): the origin is typically
 * on the host or network the proxy's default policy refuses.
 */
async function requestWith(
  t: TestContext,
  auth: ProxyAuth,
): Promise<CreateRequest & { auth: ProxyAuth }> {
  const origin = await t.harness.credentialOrigin?.();
  return { ...t.request(origin === undefined ? {} : { egress: { allow: [origin] } }), auth };
}

/** Creates an instance whose proxy requires `auth` (delivered by the harness where the caller's cloud-init would). */
async function createWith(
  t: TestContext,
  req: CreateRequest & { auth: ProxyAuth },
): Promise<string> {
  const id = await t.provider.create(req);
  await t.harness.deliverAuth?.(id, req.auth);
  return id;
}

/**
 * Proxy credentials (§2.1) and their rotation in place (§4.20): what a
 * Create's password file lets in, `updateAuth` taking a new file with the
 * old credential kept through the overlap and ended after it, and its
 * refusals. Registered for `credentialRotation: 'in-place'`.
 */
export function describeCredentialsConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  if (credentialRotationOf(opts.profile) !== 'in-place') return;
  opts.vitest.describe('proxy credentials', () => {
    test(opts, 'an in-place provider has updateAuth', async (t) => {
      expect(typeof t.provider.updateAuth, 'the type of provider.updateAuth').toBe('function');
    });

    test(opts, 'a Create with a password file lets its user in and no one else', async (t) => {
      const { watch, now, settleMs } = hooks(t);
      const id = await createWith(t, await requestWith(t, passwordFile(OLD).auth));
      const w = await watch(id, [{ credential: OLD, want: true }]);
      expect(w.reached, `the user of the file accepted within ${settleMs} ms of Create`).toBe(true);
      expect(await now(id, STRANGER), 'a user the file does not hold accepted').toBe(false);
      expect(
        await now(id, { username: OLD.username, password: `${OLD.password}x` }),
        'the user of the file with a wrong password accepted',
      ).toBe(false);
      expect(await now(id, OLD), 'the user of the file still accepted').toBe(true);
    });

    test(
      opts,
      'updateAuth takes a new credential in place, the old one kept through the overlap',
      async (t) => {
        const { watch, settleMs } = hooks(t);
        const update = updateAuthOf(t);
        const req = await requestWith(t, passwordFile(OLD).auth);
        const id = await createWith(t, req);
        const first = await watch(id, [{ credential: OLD, want: true }]);
        expect(first.reached, `the user of the file accepted within ${settleMs} ms of Create`).toBe(
          true,
        );
        const before = await counts(t);
        await update(id, passwordFile(OLD, NEW).auth);
        const w = await watch(
          id,
          [{ credential: NEW, want: true }],
          [{ credential: OLD, want: true }],
        );
        expect(
          w.broken?.username,
          `a credential refused during the overlap (${ms(w)} after updateAuth)`,
        ).toBe(undefined);
        expect(w.reached, `the new credential accepted within ${settleMs} ms of updateAuth`).toBe(
          true,
        );
        expect(await t.harness.instanceCount(), 'instances after updateAuth').toBe(
          before.instances,
        );
        expect((await t.provider.get(id)).uid, 'the UID of the instance after updateAuth').toBe(
          req.uid,
        );
      },
    );

    test(
      opts,
      'updateAuth without the old credential refuses it within authSettleMs',
      async (t) => {
        const { watch, now, settleMs } = hooks(t);
        const update = updateAuthOf(t);
        const id = await createWith(t, await requestWith(t, passwordFile(OLD, NEW).auth));
        const both = await watch(id, [
          { credential: OLD, want: true },
          { credential: NEW, want: true },
        ]);
        expect(
          both.reached,
          `both users of the file accepted within ${settleMs} ms of Create`,
        ).toBe(true);
        await update(id, passwordFile(NEW).auth);
        const w = await watch(
          id,
          [{ credential: OLD, want: false }],
          [{ credential: NEW, want: true }],
        );
        expect(
          w.broken?.username,
          `the credential kept refused while the old one was ending (${ms(w)} after updateAuth)`,
        ).toBe(undefined);
        expect(
          w.reached,
          `the removed credential refused within ${settleMs} ms of updateAuth`,
        ).toBe(true);
        expect(await now(id, STRANGER), 'a user no file held accepted after updateAuth').toBe(
          false,
        );
      },
    );

    test(
      opts,
      'updateAuth of a gone or unmarked instance is NotFound, of a malformed ID Permanent',
      async (t) => {
        const update = updateAuthOf(t);
        const { auth } = passwordFile(OLD);
        const id = await createWith(t, await requestWith(t, auth));
        await t.provider.delete(id);
        await expectGone(t, id);
        expect(await outcome(update(id, auth)), 'updateAuth of a deleted instance').toBe(
          'NotFound',
        );
        const other = await createWith(t, await requestWith(t, auth));
        await t.harness.replaceInstance(other, undefined);
        expect(
          await outcome(update(other, auth)),
          'updateAuth of an instance that carries no mark',
        ).toBe('NotFound');
        for (const bad of ['', 'x', `${id}/extra`, id.toUpperCase()]) {
          const before = t.harness.backendCalls();
          const what = JSON.stringify(bad);
          expect(await outcome(update(bad, auth)), `updateAuth(${what})`).toBe('Permanent');
          expect(t.harness.backendCalls(), `backend calls for updateAuth(${what})`).toBe(before);
        }
      },
    );

    test(opts, 'an empty password file is Permanent before any backend call', async (t) => {
      const update = updateAuthOf(t);
      const empty: ProxyAuth = { realm: REALM, passwordFile: new Uint8Array() };
      const quoted: ProxyAuth = { ...passwordFile(OLD).auth, realm: 'a "quoted" realm' };
      for (const [what, auth, field] of [
        ['an empty password file', empty, 'passwordFile'],
        ['a realm with a quote', quoted, 'realm'],
      ] as const) {
        const before = await counts(t);
        const creating = t.provider.create(t.request({ auth }));
        expect(await outcome(creating), `class of a Create with ${what}`).toBe('Permanent');
        const err = await rejection(creating);
        expect((err as Error).message, `the refusal of a Create with ${what} names`).toContain(
          field,
        );
        expect(await counts(t), `backend calls and instances after a Create with ${what}`).toEqual(
          before,
        );
      }
      const id = await createWith(t, await requestWith(t, passwordFile(OLD).auth));
      for (const [what, auth, field] of [
        ['an empty password file', empty, 'passwordFile'],
        ['a realm with a quote', quoted, 'realm'],
      ] as const) {
        const calls = t.harness.backendCalls();
        const updating = update(id, auth);
        expect(await outcome(updating), `class of updateAuth with ${what}`).toBe('Permanent');
        const err = await rejection(updating);
        expect((err as Error).message, `the refusal of updateAuth with ${what} names`).toContain(
          field,
        );
        expect(t.harness.backendCalls(), `backend calls for updateAuth with ${what}`).toBe(calls);
      }
    });

    test(opts, 'the password file never reaches logs, spans or errors', async (t) => {
      const update = updateAuthOf(t);
      const first = passwordFile(OLD);
      const second = passwordFile(OLD, NEW);
      const errors: unknown[] = [];
      const req = await requestWith(t, first.auth);
      const id = await createWith(t, req);
      await t.provider.create(req);
      await update(id, second.auth);
      const foreign = t.request({ auth: second.auth });
      await t.harness.plantMarked(foreign.name, { uid: 'someone-else', installation: 'default' });
      await collect(errors, t.provider.create(foreign));
      t.harness.injectMalformed();
      await collect(errors, update(id, second.auth));
      const cancelled = await abortWhileBlocked(t, 0, 'updateAuth', (signal) =>
        update(id, second.auth, { signal }),
      );
      if (cancelled.state === 'rejected') errors.push(cancelled.error);
      else await collect(errors, cancelled.promise);
      await t.provider.delete(id);
      await expectGone(t, id);
      await collect(errors, update(id, second.auth));
      expect(errors.length, 'failed calls to look into').toBeGreaterThan(2);
      for (const digest of [...first.digests, ...second.digests]) {
        for (const err of errors) {
          expect(leakedIn(everythingIn(err), digest), 'the password file in an error').toBe(
            undefined,
          );
        }
        expect(leakedIn(t.logs.text(), digest), 'the password file in the logs').toBe(undefined);
        expect(leakedIn(t.spans.text(), digest), 'the password file in the spans').toBe(undefined);
      }
    });
  });
}
