/**
 * What every section of the conformance suite shares: the suite's options,
 * the context each test body gets, registering a test with a fresh
 * fixture, and the helpers its assertions use (outcomes, settling within a
 * time, cancelling while blocked, leak searches, backend counts).
 *
 * @module
 */
import { inspect } from 'node:util';
import {
  type CreateRequest,
  type ErrorClass,
  type Profile,
  type Provider,
  ProviderError,
} from '@proxy-op/contract';
import type { ConformanceTestApi } from './api.js';
import type { BackendHarness, ConformanceFactory } from './harness.js';
import { createLogSink, createSpanRecorder, type LogSink, type SpanRecorder } from './telemetry.js';

/** Options of the whole suite and of each section. */
export interface ConformanceOptions {
  /** The test runner: `import * as vitest from 'vitest'`. */
  readonly vitest: ConformanceTestApi;
  /** Builds a fresh provider, backend and harness for each test. */
  readonly factory: ConformanceFactory;
  /** The provider's profile; tests that do not apply to it are not registered. */
  readonly profile: Profile;
  /** Whether the provider implements the Checker (`check`). */
  readonly checker: boolean;
  /** What "promptly" means for a cancelled call, in ms (default 1000). */
  readonly promptMs?: number | undefined;
  /**
   * Per-test timeout in ms (default 30000); a test that goes round a loop
   * (Create cancelled at each of its backend calls) gets it per round.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * How long a `returns-early` provider may take, after Delete returned,
   * until Get answers NotFound, in ms (default 20000).
   */
  readonly goneWithinMs?: number | undefined;
}

/** What each test body gets. */
export interface TestContext {
  /** The provider under test, fresh for this test. */
  readonly provider: Provider;
  /** The provider's declared profile, which chose the tests. */
  readonly profile: Profile;
  /** The controls of the provider's backend. */
  readonly harness: BackendHarness;
  /** Every line the provider logged. */
  readonly logs: LogSink;
  /** Every span the provider finished. */
  readonly spans: SpanRecorder;
  /** How soon, in ms, a cancelled call must settle: {@link ConformanceOptions.promptMs}. */
  readonly promptMs: number;
  /** See {@link ConformanceOptions.goneWithinMs}. */
  readonly goneWithinMs: number;
  /** A fresh valid request: a unique name and UID, the harness's base placement. */
  request(patch?: Partial<CreateRequest>): CreateRequest;
  /**
   * Runs one round of a looping test under its own hang detector
   * ({@link ConformanceOptions.timeoutMs}); rejects naming the round when it
   * does not finish in time.
   */
  round<T>(what: string, body: () => Promise<T>): Promise<T>;
}

let counter = 0;

/**
 * Registers one test that builds a fixture, runs `body`, and always cleans
 * up. A test of `rounds` rounds (each run through {@link TestContext.round})
 * gets the per-test timeout once per round.
 */
export function test(
  opts: ConformanceOptions,
  name: string,
  body: (t: TestContext) => Promise<void>,
  rounds = 1,
): void {
  const perTest = opts.timeoutMs ?? 30_000;
  opts.vitest.it(
    name,
    async () => {
      const logs = createLogSink();
      const spans = createSpanRecorder();
      const fx = await opts.factory({ logger: logs.logger, tracer: spans.tracer });
      const run = ++counter;
      let n = 0;
      const ctx: TestContext = {
        provider: fx.provider,
        profile: opts.profile,
        harness: fx.harness,
        logs,
        spans,
        promptMs: opts.promptMs ?? 1000,
        goneWithinMs: opts.goneWithinMs ?? 20_000,
        request: (patch = {}) => {
          n++;
          return {
            ...fx.harness.baseRequest,
            name: `proxy-ct-${run}-${n}`,
            uid: `00000000-0000-4000-8000-${String(run * 100 + n).padStart(12, '0')}`,
            cloudInit: new TextEncoder().encode('#cloud-config\nruncmd: [echo hello]\n'),
            ...patch,
          };
        },
        round: async (what, roundBody) => {
          const out = await settleWithin(roundBody(), perTest);
          if (out.state === 'pending') {
            throw new Error(
              `${what} did not finish within ${perTest} ms (the per-test timeout, timeoutMs, applies to each round)`,
            );
          }
          if (out.state === 'rejected') throw out.error;
          return out.value;
        },
      };
      try {
        await body(ctx);
      } finally {
        await fx.cleanup?.();
      }
    },
    perTest * rounds,
  );
}

/** Awaits a rejection; fails when `p` resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    const value = await p;
    throw new ResolvedError(value);
  } catch (err) {
    if (err instanceof ResolvedError)
      throw new Error(`expected a rejection, got ${inspect(err.value)}`);
    return err;
  }
}

class ResolvedError extends Error {
  constructor(readonly value: unknown) {
    super('resolved');
  }
}

/**
 * How a call ended: `resolved`, or the class of its rejection, for one
 * labelled assertion that shows what went wrong instead of an uncaught
 * error.
 */
export async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return classOf(err);
  }
}

/** The UID Get answers for `id`, or the class of its rejection. */
export async function uidOf(t: TestContext, id: string): Promise<string> {
  try {
    return (await t.provider.get(id)).uid;
  } catch (err) {
    return `rejected: ${classOf(err)}`;
  }
}

/** The error class of a rejection, or a description of what else came back. */
export function classOf(err: unknown): ErrorClass | string {
  if (ProviderError.isInstance(err)) return err.errorClass;
  return `not a ProviderError: ${inspect(err, { depth: 1 })}`;
}

/** How `p` settled within `ms`, and how long it took. */
export async function settleWithin<T>(p: Promise<T>, ms: number): Promise<Settled<T>> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'pending'>((r) => {
    timer = setTimeout(() => r('pending'), ms);
  });
  try {
    const out = await Promise.race([
      p.then(
        (value) => ({ state: 'resolved' as const, value }),
        (error: unknown) => ({ state: 'rejected' as const, error }),
      ),
      timeout,
    ]);
    const took = performance.now() - t0;
    return out === 'pending' ? { state: 'pending', ms: took } : { ...out, ms: took };
  } finally {
    clearTimeout(timer);
  }
}

/** How a promise settled within a time limit. */
export type Settled<T> =
  | { state: 'resolved'; value: T; ms: number }
  | { state: 'rejected'; error: unknown; ms: number }
  | { state: 'pending'; ms: number };

/**
 * Starts `start(signal)` with backend calls held after the first `skip`,
 * aborts the signal once a call is held, and reports how the call settled
 * within `promptMs`. The held calls are let go before it returns; `promise`
 * is the call itself, for a caller that wants its final outcome. When the
 * call finishes without reaching the held call, it throws, unless
 * `mayFinish` is set: then it answers `{ reached: false }` with how it
 * settled.
 */
export async function abortWhileBlocked<T>(
  t: TestContext,
  skip: number,
  what: string,
  start: (signal: AbortSignal) => Promise<T>,
  mayFinish = false,
): Promise<Settled<T> & { promise: Promise<T>; reached: boolean }> {
  const gate = t.harness.blockCalls(skip);
  const ac = new AbortController();
  try {
    const promise = start(ac.signal);
    promise.catch(() => {});
    const first = await Promise.race([
      gate.reached.then(() => 'reached' as const),
      promise.then(
        () => 'finished' as const,
        () => 'finished' as const,
      ),
      new Promise<'pending'>((r) => setTimeout(() => r('pending'), 10_000).unref()),
    ]);
    if (first === 'finished' && mayFinish) {
      return { ...(await settleWithin(promise, 0)), promise, reached: false };
    }
    if (first !== 'reached') {
      throw new Error(
        `${what} never reached backend call ${skip + 1}, where it was to be cancelled (${first})`,
      );
    }
    ac.abort();
    return { ...(await settleWithin(promise, t.promptMs)), promise, reached: true };
  } finally {
    gate.release();
  }
}

/** Resolves with whichever of `p` or the timeout comes first; `false` on timeout. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  const r = await settleWithin(p, ms);
  return r.state !== 'pending';
}

/** Everything an error shows anyone: message, JSON, and the inspected cause chain. */
export function everythingIn(err: unknown): string {
  let json = '';
  try {
    json = JSON.stringify(err);
  } catch {
    json = '';
  }
  return `${String(err)}\n${json}\n${inspect(err, { depth: 8 })}`;
}

const B64_RUN = /[A-Za-z0-9+/_-]{8,}={0,2}/g;
const HEX_RUN = /(?:[0-9a-fA-F]{2}){4,}/g;

/**
 * Where `secret` shows in `text`, in any form a careless provider could
 * let through: as is, URL-encoded, hexadecimal, or base64 in either
 * alphabet at any alignment (inside a Basic authorization header, say).
 * Returns the form found, or undefined. It decodes what it finds rather
 * than encoding the secret, so it does not share a blind spot with a
 * redactor that encodes.
 */
export function leakedIn(text: string, secret: string): string | undefined {
  if (text.includes(secret)) return 'plain';
  let decoded = text;
  try {
    decoded = decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    decoded = text.replace(/%[0-9a-fA-F]{2}/g, (m) =>
      String.fromCharCode(Number.parseInt(m.slice(1), 16)),
    );
  }
  if (decoded.includes(secret) || decoded.includes(secret.replace(/\+/g, ' ')))
    return 'url-encoded';
  for (const run of text.match(HEX_RUN) ?? []) {
    for (const start of [0, 1]) {
      const bytes = Buffer.from(run.slice(start).replace(/^((?:..)*).?$/, '$1'), 'hex');
      if (bytes.toString('latin1').includes(secret) || bytes.toString('utf8').includes(secret)) {
        return 'hex';
      }
    }
  }
  for (const run of text.match(B64_RUN) ?? []) {
    const std = run.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    for (let shift = 0; shift < 4; shift++) {
      const bytes = Buffer.from(std.slice(shift), 'base64');
      if (bytes.toString('latin1').includes(secret) || bytes.toString('utf8').includes(secret)) {
        return 'base64';
      }
    }
  }
  return undefined;
}

/** The backend's counters at one moment, to compare before and after. */
export interface Counts {
  /** Backend calls made so far. */
  readonly calls: number;
  /** Instances on the backend. */
  readonly instances: number;
  /** Secondary resources; 0 when the harness does not count them. */
  readonly secondary: number;
}

/** Reads the harness's counters. */
export async function counts(t: TestContext): Promise<Counts> {
  return {
    calls: t.harness.backendCalls(),
    instances: await t.harness.instanceCount(),
    secondary: (await t.harness.secondaryCount?.()) ?? 0,
  };
}

/** Runs `p`, keeping its error (if any) for later "never contains" checks. */
export async function collect(errors: unknown[], p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    errors.push(err);
  }
}

export { createLogSink, createSpanRecorder };

/**
 * Waits until Get of `id` is NotFound: at once for a provider whose Delete
 * waits, polling up to `goneWithinMs` (with the harness's `settle`) for
 * one that returns early.
 */
export async function expectGone(t: TestContext, id: string): Promise<void> {
  const deadline = Date.now() + (t.profile.deleteReturn === 'returns-early' ? t.goneWithinMs : 0);
  for (;;) {
    await t.harness.settle?.();
    const err = await t.provider.get(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (err !== undefined && classOf(err) === 'NotFound') return;
    if (Date.now() >= deadline) {
      throw new Error(
        `get(${id}) after delete: expected NotFound, got ${err === undefined ? 'the instance' : classOf(err)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Fails the test with `message` when `value` is undefined; returns it otherwise. */
export function required<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw new Error(message);
  return value;
}
