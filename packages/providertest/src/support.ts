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
  /** Per-test timeout in ms (default 30000). */
  readonly timeoutMs?: number | undefined;
}

/** What each test body gets. */
export interface TestContext {
  readonly provider: Provider;
  readonly harness: BackendHarness;
  readonly logs: LogSink;
  readonly spans: SpanRecorder;
  readonly promptMs: number;
  /** A fresh valid request: a unique name and UID, the harness's base placement. */
  request(patch?: Partial<CreateRequest>): CreateRequest;
}

let counter = 0;

/** Registers one test that builds a fixture, runs `body`, and always cleans up. */
export function test(
  opts: ConformanceOptions,
  name: string,
  body: (t: TestContext) => Promise<void>,
): void {
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
        harness: fx.harness,
        logs,
        spans,
        promptMs: opts.promptMs ?? 1000,
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
      };
      try {
        await body(ctx);
      } finally {
        await fx.cleanup?.();
      }
    },
    opts.timeoutMs ?? 30_000,
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
 * is the call itself, for a caller that wants its final outcome.
 */
export async function abortWhileBlocked<T>(
  t: TestContext,
  skip: number,
  what: string,
  start: (signal: AbortSignal) => Promise<T>,
): Promise<Settled<T> & { promise: Promise<T> }> {
  const gate = t.harness.blockCalls(skip);
  const ac = new AbortController();
  try {
    const promise = start(ac.signal);
    promise.catch(() => {});
    if (!(await within(gate.reached, 10_000))) {
      throw new Error(
        `${what} never reached backend call ${skip + 1}, where it was to be cancelled`,
      );
    }
    ac.abort();
    return { ...(await settleWithin(promise, t.promptMs)), promise };
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

/** Runs `p`, keeping its error (if any) for later "never contains" checks. */
export async function collect(errors: unknown[], p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    errors.push(err);
  }
}

export { createLogSink, createSpanRecorder };
