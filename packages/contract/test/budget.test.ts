// Peer: none (in-process). The per-call budget, the abort race and the branded backend
// errors, on scripted seams; a second copy of the built package for the brand.

import { getEventListeners } from 'node:events';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  abortable,
  BackendError,
  BudgetError,
  budgetSeam,
  isMalformedAnswer,
  type Logger,
  observeSeam,
} from '../src/index.js';

/** A seam call that waits until its signal fires and records what it saw. */
function waitingSeam() {
  const seen: { signal?: AbortSignal; aborted?: unknown }[] = [];
  const seam = {
    get(id: string, signal?: AbortSignal): Promise<string> {
      const entry: { signal?: AbortSignal; aborted?: unknown } = {};
      if (signal !== undefined) entry.signal = signal;
      seen.push(entry);
      return new Promise((resolve, reject) => {
        if (id === 'fast') resolve('answer');
        signal?.addEventListener('abort', () => {
          entry.aborted = signal.reason;
          reject(new Error('the transport gave up'));
        });
      });
    },
    version(signal?: AbortSignal): Promise<string> {
      return signal === undefined ? Promise.resolve('no signal') : Promise.resolve('1.0');
    },
    ignoresSignal(_signal?: AbortSignal): Promise<string> {
      return new Promise(() => {});
    },
    close(): void {},
  };
  return { seam, seen };
}

describe('budgetSeam', () => {
  it('passes the caller signal joined with the budget and aborts the call underneath', async () => {
    const { seam, seen } = waitingSeam();
    const bounded = budgetSeam(seam, 40);
    const t0 = performance.now();
    const err = await bounded.get('slow').catch((e: unknown) => e);
    expect(BudgetError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ code: 'PROVIDER_CALL_BUDGET', call: 'get', budgetMs: 40 });
    expect((err as Error).message).toBe('get did not answer within 40 ms');
    expect((err as Error).name).toBe('BudgetError');
    expect(performance.now() - t0).toBeLessThan(2_000);
    // The call underneath was really aborted, by the budget's timeout.
    expect(seen[0]?.signal?.aborted).toBe(true);
    expect((seen[0]?.aborted as Error | undefined)?.name).toBe('TimeoutError');
    // It rejected at the budget, not when the transport got round to it.
    expect((err as Error).cause).toBeUndefined();
    expect(await bounded.get('fast')).toBe('answer');
  });

  it('rejects at the budget even when the call ignores its signal', async () => {
    const { seam } = waitingSeam();
    const err = await budgetSeam(seam, 30)
      .ignoresSignal()
      .catch((e: unknown) => e);
    expect(BudgetError.isInstance(err)).toBe(true);
    expect((err as Error).cause).toBeUndefined();
  });

  it("answers the caller's cancellation with the signal's reason, not a budget error", async () => {
    const { seam, seen } = waitingSeam();
    const ac = new AbortController();
    const p = budgetSeam(seam, 60_000).get('slow', ac.signal);
    const reason = new Error('caller stopped');
    setTimeout(() => ac.abort(reason), 10);
    await expect(p).rejects.toBe(reason);
    expect(seen[0]?.aborted).toBe(reason);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('fills in a signal the caller left out, and leaves methods without a budget alone', async () => {
    const { seam } = waitingSeam();
    const byMethod = budgetSeam(seam, (m) => (m === 'version' ? 1_000 : undefined));
    expect(await byMethod.version()).toBe('1.0');
    expect(byMethod.get).toBe(seam.get);
    expect(budgetSeam(seam, 0).version).toBe(seam.version);
  });

  it('finds the signal where the caller put it, or gives one to a method that declares none', async () => {
    const seen: unknown[][] = [];
    const seam = {
      // A fake that ignores its signal and declares no parameter for it.
      version: (...args: unknown[]): Promise<string> => {
        seen.push(args);
        return Promise.resolve('1.0');
      },
      put(_req: unknown, _signal?: AbortSignal, _extra?: unknown) {
        seen.push([_req, _signal, _extra]);
        return Promise.resolve('ok');
      },
    };
    const bounded = budgetSeam(seam, 1_000);
    expect(await bounded.version()).toBe('1.0');
    expect(seen[0]?.[0]).toBeInstanceOf(AbortSignal);
    const ac = new AbortController();
    expect(await bounded.put({ a: 1 }, ac.signal, 'x')).toBe('ok');
    expect(seen[1]?.[0]).toEqual({ a: 1 });
    expect(seen[1]?.[1]).toBeInstanceOf(AbortSignal);
    expect(seen[1]?.[1]).not.toBe(ac.signal);
    expect(seen[1]?.[2]).toBe('x');
    expect(await bounded.put({ a: 2 })).toBe('ok');
    // Not passed: the last declared parameter (length counts `_req`, `_signal`, `_extra`).
    expect(seen[2]?.[2]).toBeInstanceOf(AbortSignal);
    // A caller with no signal passes undefined in its place: it goes there,
    // also beneath a rest-parameter wrapper, whose parameters cannot be counted.
    expect(await bounded.version('zone-a', undefined)).toBe('1.0');
    expect(seen[3]?.[0]).toBe('zone-a');
    expect(seen[3]?.[1]).toBeInstanceOf(AbortSignal);
    expect(seen[3]).toHaveLength(2);
  });

  it('is applied by observeSeam, whose log line records the budget error', async () => {
    const { seam } = waitingSeam();
    const lines: Record<string, unknown>[] = [];
    const logger: Logger = {
      trace: () => {},
      debug: (o) => {
        lines.push(o as Record<string, unknown>);
      },
      info: () => {},
      warn: () => {},
      error: () => {},
      child: () => logger,
    };
    const observed = observeSeam(seam, { prefix: 'toy', provider: 'toy-1', logger, budget: 20 });
    await expect(observed.get('slow')).rejects.toSatisfy((e) => BudgetError.isInstance(e));
    expect(lines[0]).toMatchObject({
      call: 'get',
      error: 'BudgetError',
      errorCode: 'PROVIDER_CALL_BUDGET',
    });
  });
});

describe('abortable', () => {
  it("rejects with the signal's reason when it fires first, and removes its listener", async () => {
    const ac = new AbortController();
    const p = abortable(new Promise<never>(() => {}), ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    const reason = new Error('stop');
    ac.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    const done = new AbortController();
    await expect(abortable(Promise.resolve(7), done.signal)).resolves.toBe(7);
    expect(getEventListeners(done.signal, 'abort')).toHaveLength(0);
    await expect(abortable(Promise.reject(new Error('x')), undefined)).rejects.toThrow('x');
  });

  it('never leaves the abandoned promise rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      let fail!: (e: Error) => void;
      const late = new Promise<never>((_r, reject) => {
        fail = reject;
      });
      await expect(abortable(late, AbortSignal.abort())).rejects.toBeDefined();
      fail(new Error('late'));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('isMalformedAnswer', () => {
  it('is true for a parse failure and false for a network failure reported as a TypeError', () => {
    expect(isMalformedAnswer(new TypeError("Cannot read properties of null (reading 'x')"))).toBe(
      true,
    );
    expect(isMalformedAnswer(new SyntaxError('Unexpected token < in JSON'))).toBe(true);
    expect(isMalformedAnswer(new RangeError('offset out of range'))).toBe(true);
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(isMalformedAnswer(new TypeError('fetch failed', { cause: refused }))).toBe(false);
    expect(isMalformedAnswer(new Error('boom'))).toBe(false);
    expect(isMalformedAnswer('text')).toBe(false);
  });
});

class AcmeError extends BackendError {
  static override readonly brand: string = '@example/acme.AcmeError';
  readonly code: string = 'ACME';
}
class AcmeAuthError extends AcmeError {
  static override readonly brand = '@example/acme.AcmeAuthError';
  override readonly code = 'ACME_AUTH';
}

describe('BackendError', () => {
  it('brands each class, its name the class part of the brand, subclasses included', () => {
    const auth = new AcmeAuthError('denied', { cause: new Error('401') });
    expect(auth.name).toBe('AcmeAuthError');
    expect(auth.code).toBe('ACME_AUTH');
    expect((auth.cause as Error).message).toBe('401');
    expect(AcmeAuthError.isInstance(auth)).toBe(true);
    expect(AcmeError.isInstance(auth)).toBe(true);
    expect(AcmeAuthError.isInstance(new AcmeError('x'))).toBe(false);
    expect(BudgetError.isInstance(auth)).toBe(false);
    expect(AcmeError.isInstance({ code: 'ACME' })).toBe(false);
    expect(AcmeError.isInstance(null)).toBe(false);
  });

  it('refuses a subclass that does not declare its own brand', () => {
    class Unbranded extends AcmeError {}
    expect(() => new Unbranded('x')).toThrow(/must declare its own static brand/);
  });

  it('recognises a budget error from a second installed copy of the package', async () => {
    const dist = fileURLToPath(new URL('../dist', import.meta.url));
    const dir = await mkdtemp(join(tmpdir(), 'contract-copy-'));
    try {
      await cp(dist, join(dir, 'dist'), { recursive: true });
      const copy = (await import(
        pathToFileURL(join(dir, 'dist', 'budget.js')).href
      )) as typeof import('../src/budget.js');
      expect(copy.BudgetError).not.toBe(BudgetError);
      const foreign = new copy.BudgetError('get', 5);
      expect(foreign instanceof BudgetError).toBe(false);
      expect(BudgetError.isInstance(foreign)).toBe(true);
      expect(copy.BudgetError.isInstance(new BudgetError('get', 5))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
