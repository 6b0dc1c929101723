// Peer: none (in-process).
import { describe, expect, it } from 'vitest';
import { KeyedLock, type Lease, LockAbortedError } from '../src/index.js';

describe('entries are removed when unused', () => {
  it('returns to size 0 after 100,000 distinct keys, with waiters and aborted waiters', async () => {
    const lock = new KeyedLock<string>();
    const N = 100_000;
    const holders: Lease[] = [];
    for (let i = 0; i < N; i++) holders.push(await lock.acquire(`vm-${i}`));
    expect(lock.size).toBe(N);

    // Every tenth key gets a waiter; every third of those aborts while queued.
    const controllers: AbortController[] = [];
    const waiters: Promise<'granted' | 'aborted'>[] = [];
    for (let i = 0; i < N; i += 10) {
      const ac = new AbortController();
      controllers.push(ac);
      waiters.push(
        lock.acquire(`vm-${i}`, { signal: ac.signal }).then(
          (lease) => {
            lease.release();
            return 'granted';
          },
          (err: unknown) => {
            if (!(err instanceof LockAbortedError)) throw err;
            return 'aborted';
          },
        ),
      );
    }
    expect(lock.waiting('vm-0')).toBe(1);
    expect(lock.waiting('vm-1')).toBe(0);
    controllers.forEach((ac, j) => {
      if (j % 3 === 0) ac.abort();
    });
    expect(lock.size).toBe(N);

    for (const h of holders) h.release();
    const outcomes = await Promise.all(waiters);
    expect(outcomes.filter((o) => o === 'aborted')).toHaveLength(Math.ceil(N / 10 / 3));
    expect(outcomes.filter((o) => o === 'granted')).toHaveLength(N / 10 - Math.ceil(N / 10 / 3));
    expect(lock.size).toBe(0);
    expect(lock.isLocked('vm-0')).toBe(false);
    expect(lock.waiting('vm-0')).toBe(0);
  });

  it('drops a key as soon as its last holder releases', async () => {
    const lock = new KeyedLock();
    for (let i = 0; i < 1000; i++) {
      await lock.run(`k${i}`, () => {
        expect(lock.size).toBe(1);
      });
      expect(lock.size).toBe(0);
    }
  });
});
