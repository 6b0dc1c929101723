// Peer: none (the work queue with fake timers).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULTS } from '../src/defaults.js';
import { TerminalError } from '../src/errors.js';
import { Backoff, WorkQueue } from '../src/runtime/queue.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const tick = () => vi.advanceTimersByTimeAsync(0);
/** The operator's default backoff of failed reconciles. */
const BACKOFF = {
  baseMs: DEFAULTS.backoffBaseMs,
  maxMs: DEFAULTS.backoffMaxMs,
  jitter: DEFAULTS.backoffJitter,
};

describe('WorkQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('merges duplicates of a waiting key', async () => {
    const q = new WorkQueue({ workers: 1, backoff: BACKOFF });
    const seen: string[] = [];
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    q.start(async (k) => {
      seen.push(k);
      return {};
    });
    await q.idle();
    expect(seen).toEqual(['a', 'b']);
  });

  it('never runs one key twice at once, and runs it again once when added meanwhile', async () => {
    const q = new WorkQueue({ workers: 3, backoff: BACKOFF });
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    q.start(async () => {
      running++;
      runs++;
      maxRunning = Math.max(maxRunning, running);
      if (runs === 1) await gate.promise;
      running--;
      return {};
    });
    q.add('a');
    await tick();
    q.add('a');
    q.add('a');
    await tick();
    expect(runs).toBe(1);
    gate.resolve();
    await q.idle();
    await tick();
    await q.idle();
    expect(runs).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('runs up to N workers on different keys', async () => {
    const q = new WorkQueue({ workers: 3, backoff: BACKOFF });
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    q.start(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await gate.promise;
      running--;
      return {};
    });
    for (const k of ['a', 'b', 'c', 'd', 'e']) q.add(k);
    await tick();
    expect(running).toBe(3);
    gate.resolve();
    await q.idle();
    expect(maxRunning).toBe(3);
  });

  it('retries failures with exponential backoff and forgets on success', async () => {
    const q = new WorkQueue({ workers: 1, backoff: { baseMs: 100, maxMs: 1000, jitter: 0 } });
    const times: number[] = [];
    let fails = 5;
    q.start(async () => {
      times.push(Date.now());
      if (fails-- > 0) throw new Error('boom');
      return {};
    });
    const t0 = Date.now();
    q.add('a');
    await vi.advanceTimersByTimeAsync(5000);
    expect(times.map((t) => t - t0)).toEqual([0, 100, 300, 700, 1500, 2500]);
    expect(q.backoff.failures('a')).toBe(0);
  });

  it('honours requeueAfter and keeps the earliest deadline', async () => {
    const q = new WorkQueue({ workers: 1, backoff: BACKOFF });
    const times: number[] = [];
    q.start(async () => {
      times.push(Date.now());
      return times.length === 1 ? { requeueAfter: 500 } : {};
    });
    const t0 = Date.now();
    q.add('a');
    await tick();
    q.addAfter('a', 2000);
    await vi.advanceTimersByTimeAsync(3000);
    expect(times.map((t) => t - t0)).toEqual([0, 500]);
  });

  it('stops retrying after a terminal error', async () => {
    const errors: Array<number | undefined> = [];
    const q = new WorkQueue({
      workers: 1,
      backoff: BACKOFF,
      onError: (_k, _e, ms) => errors.push(ms),
    });
    let runs = 0;
    q.start(async () => {
      runs++;
      throw new TerminalError('no');
    });
    q.add('a');
    await vi.advanceTimersByTimeAsync(600_000);
    expect(runs).toBe(1);
    expect(errors).toEqual([undefined]);
    expect(q.delayed).toBe(0);
  });

  it('drains in-flight work on shutdown and takes nothing after', async () => {
    const q = new WorkQueue({ workers: 1, backoff: BACKOFF });
    const gate = deferred();
    let done = 0;
    q.start(async () => {
      await gate.promise;
      done++;
      return { requeueAfter: 10 };
    });
    q.add('a');
    await tick();
    const stopped = q.shutdown();
    q.add('b');
    gate.resolve();
    await stopped;
    await vi.advanceTimersByTimeAsync(100);
    expect(done).toBe(1);
  });
});

describe('Backoff', () => {
  it('stays within bounds with jitter', () => {
    const values = [0, 0.999999, 0.5];
    let i = 0;
    const b = new Backoff({
      baseMs: 1000,
      maxMs: 8000,
      jitter: 0.2,
      random: () => values[i++ % 3] ?? 0,
    });
    const delays = Array.from({ length: 9 }, () => b.next('k'));
    expect(delays[0]).toBe(800);
    expect(delays[1]).toBeCloseTo(2400, -1);
    expect(delays[2]).toBe(4000);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(800);
      expect(d).toBeLessThanOrEqual(8000);
    }
    expect(delays.slice(4).every((d) => d >= 6400)).toBe(true);
  });

  it('rejects bad bounds', () => {
    expect(() => new Backoff({ baseMs: 0, maxMs: 10, jitter: 0 })).toThrow(RangeError);
    expect(() => new Backoff({ baseMs: 10, maxMs: 5, jitter: 0 })).toThrow(RangeError);
    expect(() => new Backoff({ baseMs: 10, maxMs: 50, jitter: 1 })).toThrow(RangeError);
  });
});
