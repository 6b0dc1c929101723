// Peer: none (timers and AbortSignals in-process).
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { isTransient, raceAbort, sleep, throwIfAborted } from '../src/index.js';

describe('abort helpers', () => {
  it('throwIfAborted is Transient with the reason as cause', () => {
    const ac = new AbortController();
    const reason = new Error('stop');
    ac.abort(reason);
    let caught: unknown;
    try {
      throwIfAborted(ac.signal, 'p', 'get');
    } catch (e) {
      caught = e;
    }
    expect(isTransient(caught)).toBe(true);
    expect((caught as Error).cause).toBe(reason);
    expect(() => throwIfAborted(undefined, 'p', 'get')).not.toThrow();
  });

  it('a timeout signal says "timed out"', () => {
    let caught: unknown;
    const s = AbortSignal.abort(new DOMException('t', 'TimeoutError'));
    try {
      throwIfAborted(s, 'p', 'get');
    } catch (e) {
      caught = e;
    }
    expect((caught as Error).message).toBe('get timed out');
  });

  it('raceAbort rejects promptly when the signal fires and removes its listener', async () => {
    const ac = new AbortController();
    const never = new Promise<never>(() => {});
    const p = raceAbort(never, ac.signal, 'p', 'create');
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    const t0 = performance.now();
    setTimeout(() => ac.abort(), 10);
    await expect(p).rejects.toSatisfy(isTransient);
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it('raceAbort settles with the promise and leaves no listener', async () => {
    const ac = new AbortController();
    await expect(raceAbort(Promise.resolve(7), ac.signal, 'p', 'get')).resolves.toBe(7);
    await expect(raceAbort(Promise.reject(new Error('x')), ac.signal, 'p', 'get')).rejects.toThrow(
      'x',
    );
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('raceAbort with an already-fired signal rejects at once', async () => {
    await expect(raceAbort(Promise.resolve(1), AbortSignal.abort(), 'p', 'get')).rejects.toSatisfy(
      isTransient,
    );
  });

  it('sleep waits, and is cut short by the signal', async () => {
    const t0 = performance.now();
    await sleep(20, undefined, 'p', 'get');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(15);
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal, 'p', 'get');
    ac.abort();
    await expect(p).rejects.toSatisfy(isTransient);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
