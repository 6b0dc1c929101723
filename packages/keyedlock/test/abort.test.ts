// Peer: none (in-process).
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { KeyedLock, type Lease, LockAbortedError } from '../src/index.js';
import { flush, leaseOf, type Tracked, track } from './helpers.js';

function expectAborted(t: Tracked<unknown>, key: unknown, reason: unknown): void {
  expect(t.state).toBe('rejected');
  const err = t.error;
  expect(err).toBeInstanceOf(LockAbortedError);
  expect(err).toBeInstanceOf(Error);
  expect(err).toMatchObject({ name: 'LockAbortedError', code: 'LOCK_ABORTED', key });
  expect((err as LockAbortedError).cause).toBe(reason);
}

describe('LockAbortedError', () => {
  it('has a stable shape and a cross-copy check', () => {
    const reason = new Error('stop');
    const err = new LockAbortedError('vm-1', reason);
    expect(err.name).toBe('LockAbortedError');
    expect(err.code).toBe('LOCK_ABORTED');
    expect(err.key).toBe('vm-1');
    expect(err.cause).toBe(reason);
    expect(LockAbortedError.isInstance(err)).toBe(true);
    expect(LockAbortedError.isInstance(new Error('x'))).toBe(false);
    expect(LockAbortedError.isInstance(null)).toBe(false);
    expect(LockAbortedError.isInstance({ code: 'LOCK_ABORTED' })).toBe(false);
    // An error from another copy carries the same global brand.
    const brand = Symbol.for('@proxy-op/keyedlock.LockAbortedError');
    expect(LockAbortedError.isInstance({ [brand]: true })).toBe(true);
  });
});

describe('abort before waiting', () => {
  it('rejects at once on a free key, without taking the lock', async () => {
    const lock = new KeyedLock();
    const reason = new Error('gone');
    const t = track(lock.acquire('k', { signal: AbortSignal.abort(reason) }));
    expect(lock.size).toBe(0);
    await flush();
    expectAborted(t, 'k', reason);
    const next = await lock.acquire('k');
    next.release();
    expect(lock.size).toBe(0);
  });

  it('rejects at once on a held key, without queueing', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const t = track(lock.acquire('k', { signal: AbortSignal.abort('why') }));
    expect(lock.waiting('k')).toBe(0);
    await flush();
    expectAborted(t, 'k', 'why');
    holder.release();
    expect(lock.size).toBe(0);
  });

  it('run rejects without calling fn', async () => {
    const lock = new KeyedLock();
    let called = false;
    await expect(
      lock.run(
        'k',
        () => {
          called = true;
        },
        { signal: AbortSignal.abort() },
      ),
    ).rejects.toBeInstanceOf(LockAbortedError);
    expect(called).toBe(false);
    expect(lock.size).toBe(0);
  });
});

describe('abort while waiting', () => {
  it('removes the waiter, which never gets the lock; the next waiter does', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const ac = new AbortController();
    const aborted = track(lock.acquire('k', { signal: ac.signal }));
    const next = track(lock.acquire('k'));
    expect(lock.waiting('k')).toBe(2);
    const reason = new Error('cancelled');
    ac.abort(reason);
    expect(lock.waiting('k')).toBe(1);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    await flush();
    expectAborted(aborted, 'k', reason);
    expect(next.state).toBe('pending');
    holder.release();
    await flush();
    expect(next.state).toBe('fulfilled');
    leaseOf(next).release();
    expect(lock.size).toBe(0);
  });

  it('removes a waiter from the middle of the queue and keeps the order', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const acs = Array.from({ length: 6 }, () => new AbortController());
    const order: number[] = [];
    const ps = acs.map((ac, i) =>
      lock.acquire('k', { signal: ac.signal }).then(
        (lease) => {
          order.push(i);
          lease.release();
        },
        () => undefined,
      ),
    );
    acs[0]!.abort();
    acs[3]!.abort();
    acs[5]!.abort();
    expect(lock.waiting('k')).toBe(3);
    holder.release();
    await Promise.all(ps);
    expect(order).toEqual([1, 2, 4]);
    expect(lock.size).toBe(0);
  });

  it('frees the key when the only waiter aborts and the holder releases', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const ac = new AbortController();
    const t = track(lock.acquire('k', { signal: ac.signal }));
    ac.abort();
    holder.release();
    await flush();
    expect(t.state).toBe('rejected');
    expect(lock.size).toBe(0);
    expect(lock.isLocked('k')).toBe(false);
  });

  it('does not affect a lease already granted', async () => {
    const lock = new KeyedLock();
    const ac = new AbortController();
    const lease = await lock.acquire('k', { signal: ac.signal });
    ac.abort();
    expect(lock.isLocked('k')).toBe(true);
    lease.release();
    expect(lock.size).toBe(0);
  });
});

describe('abort racing the hand-over', () => {
  it('abort then release in one tick: the aborted waiter is skipped', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const ac = new AbortController();
    const t = track(lock.acquire('k', { signal: ac.signal }));
    ac.abort('r');
    holder.release();
    await flush();
    expectAborted(t, 'k', 'r');
    expect(lock.size).toBe(0);
  });

  it('release then abort in one tick: the waiter was granted and must release', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const ac = new AbortController();
    const t = track(lock.acquire('k', { signal: ac.signal }));
    holder.release();
    ac.abort();
    await flush();
    expect(t.state).toBe('fulfilled');
    expect(lock.isLocked('k')).toBe(true);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    leaseOf(t).release();
    expect(lock.size).toBe(0);
  });

  it('holder released from an earlier listener of the same signal: no leaked lock', async () => {
    // The signal is already aborted when the hand-over runs, but the
    // waiter's own abort listener has not run yet. Granting it would leak.
    const lock = new KeyedLock();
    const ac = new AbortController();
    const holder = await lock.acquire('k');
    ac.signal.addEventListener('abort', () => holder.release(), { once: true });
    const aborted = track(lock.acquire('k', { signal: ac.signal }));
    const next = track(lock.acquire('k'));
    ac.abort('shutdown');
    // The lock went straight to the next live waiter.
    expect(lock.isLocked('k')).toBe(true);
    expect(lock.waiting('k')).toBe(0);
    await flush();
    expectAborted(aborted, 'k', 'shutdown');
    expect(next.state).toBe('fulfilled');
    leaseOf(next).release();
    expect(lock.size).toBe(0);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('same, with no other waiter: the key is freed', async () => {
    const lock = new KeyedLock();
    const ac = new AbortController();
    const holder = await lock.acquire('k');
    ac.signal.addEventListener('abort', () => holder.release(), { once: true });
    const aborted = track(lock.acquire('k', { signal: ac.signal }));
    ac.abort();
    expect(lock.size).toBe(0);
    await flush();
    expect(aborted.state).toBe('rejected');
  });

  it('tolerates a signal-like that still calls a listener removed during dispatch', async () => {
    // Node's AbortSignal skips such a listener; a duck-typed signal may not.
    type Listener = () => void;
    const listeners = new Set<Listener>();
    const fake = {
      aborted: false,
      reason: undefined as unknown,
      addEventListener: (_type: string, l: Listener) => listeners.add(l),
      removeEventListener: (_type: string, l: Listener) => listeners.delete(l),
      abort(reason: unknown) {
        this.aborted = true;
        this.reason = reason;
        for (const l of [...listeners]) l();
      },
    };
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    fake.addEventListener('abort', () => holder.release());
    const aborted = track(lock.acquire('k', { signal: fake as unknown as AbortSignal }));
    const next = track(lock.acquire('k'));
    const last = track(lock.acquire('k'));
    fake.abort('stop');
    expect(lock.waiting('k')).toBe(1);
    await flush();
    expectAborted(aborted, 'k', 'stop');
    expect(next.state).toBe('fulfilled');
    leaseOf(next).release();
    await flush();
    expect(last.state).toBe('fulfilled');
    leaseOf(last).release();
    expect(lock.size).toBe(0);
  });

  it('random interleavings of aborts and releases never leak a lock', async () => {
    const lock = new KeyedLock();
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let held = 0;
    let maxHeld = 0;
    let granted = 0;
    let rejected = 0;
    for (let round = 0; round < 200; round++) {
      const holder = await lock.acquire('k');
      const acs = Array.from({ length: 1 + rnd(5) }, () => new AbortController());
      const settled = acs.map((ac) =>
        lock.acquire('k', { signal: ac.signal }).then(
          async (lease: Lease) => {
            granted++;
            held++;
            maxHeld = Math.max(maxHeld, held);
            if (rnd(2) === 0) await Promise.resolve();
            held--;
            lease.release();
          },
          (err: unknown) => {
            expect(err).toBeInstanceOf(LockAbortedError);
            rejected++;
          },
        ),
      );
      // Abort a random subset, some before and some after the release, all in one tick.
      const releaseAt = rnd(acs.length + 1);
      acs.forEach((ac, i) => {
        if (i === releaseAt) holder.release();
        if (rnd(2) === 0) ac.abort();
      });
      if (releaseAt === acs.length) holder.release();
      await Promise.all(settled);
      expect(lock.size).toBe(0);
    }
    expect(maxHeld).toBe(1);
    expect(granted).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  });
});

describe('abort listeners', () => {
  it('leaves no listener behind on a long-lived signal over many cycles', async () => {
    const lock = new KeyedLock();
    const ac = new AbortController();
    const { signal } = ac;
    for (let i = 0; i < 2000; i++) {
      const holder = await lock.acquire('k', { signal });
      // A queued waiter adds one listener; the hand-over must remove it.
      const waiters = [lock.acquire('k', { signal }), lock.acquire('k', { signal })];
      expect(getEventListeners(signal, 'abort')).toHaveLength(2);
      holder.release();
      for (const w of waiters) (await w).release();
      await lock.run('k', () => undefined, { signal });
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(lock.size).toBe(0);
  });

  it('removes the listener of an aborted waiter', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const ac = new AbortController();
    const t = track(lock.acquire('k', { signal: ac.signal }));
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    ac.abort();
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    holder.release();
    await flush();
    expect(t.state).toBe('rejected');
  });
});
