// Peer: none (in-process).
import { describe, expect, it } from 'vitest';
import { KeyedLock, type Lease } from '../src/index.js';
import { flush, leaseOf, track } from './helpers.js';

describe('mutual exclusion', () => {
  it('never lets two holders of one key overlap under concurrency', async () => {
    const lock = new KeyedLock();
    const keys = ['a', 'b', 'c'];
    const active = new Map<string, number>();
    const maxActive = new Map<string, number>();
    const done = new Map<string, number>();
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const tasks: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      const key = keys[i % keys.length]!;
      const yields = rnd() % 4;
      tasks.push(
        lock.run(key, async () => {
          const now = (active.get(key) ?? 0) + 1;
          active.set(key, now);
          maxActive.set(key, Math.max(maxActive.get(key) ?? 0, now));
          for (let y = 0; y < yields; y++) {
            if (y % 2 === 0) await Promise.resolve();
            else await flush();
          }
          active.set(key, (active.get(key) ?? 0) - 1);
          done.set(key, (done.get(key) ?? 0) + 1);
        }),
      );
    }
    await Promise.all(tasks);
    expect(Object.fromEntries(maxActive)).toEqual({ a: 1, b: 1, c: 1 });
    expect(Object.fromEntries(done)).toEqual({ a: 100, b: 100, c: 100 });
    expect(lock.size).toBe(0);
  });

  it('makes a second acquirer wait until the holder releases', async () => {
    const lock = new KeyedLock();
    const first = await lock.acquire('vm');
    const second = track(lock.acquire('vm'));
    await flush();
    expect(second.state).toBe('pending');
    expect(lock.isLocked('vm')).toBe(true);
    expect(lock.waiting('vm')).toBe(1);
    first.release();
    await flush();
    expect(second.state).toBe('fulfilled');
    expect(lock.isLocked('vm')).toBe(true);
    expect(lock.waiting('vm')).toBe(0);
    leaseOf(second).release();
    expect(lock.isLocked('vm')).toBe(false);
    expect(lock.size).toBe(0);
  });
});

describe('FIFO order', () => {
  it('serves the waiters of one key in the order they called acquire', async () => {
    const lock = new KeyedLock();
    const holder = await lock.acquire('k');
    const order: number[] = [];
    const waiters = Array.from({ length: 20 }, (_, i) =>
      lock.acquire('k').then((lease) => {
        order.push(i);
        // Release on a later turn so the next grant is not a synchronous chain.
        setImmediate(() => lease.release());
      }),
    );
    expect(lock.waiting('k')).toBe(20);
    holder.release();
    await Promise.all(waiters);
    await flush();
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(lock.size).toBe(0);
  });

  it('keeps the order for waiters that arrive while others are served', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const a = await lock.acquire('k');
    let d: Promise<unknown> = Promise.resolve();
    const b = lock.run('k', () => {
      order.push('b');
      // Joins the queue behind c, which called acquire earlier.
      d = lock.run('k', () => order.push('d'));
    });
    const c = lock.run('k', () => order.push('c'));
    a.release();
    await Promise.all([b, c]);
    await d;
    expect(order).toEqual(['b', 'c', 'd']);
    expect(lock.size).toBe(0);
  });
});

describe('independent keys', () => {
  it('does not block a key while another is held', async () => {
    const lock = new KeyedLock();
    const a = await lock.acquire('a');
    const b = track(lock.acquire('b'));
    await flush();
    expect(b.state).toBe('fulfilled');
    expect(lock.size).toBe(2);
    expect(lock.isLocked('a')).toBe(true);
    expect(lock.isLocked('b')).toBe(true);
    expect(lock.waiting('a')).toBe(0);
    a.release();
    expect(lock.isLocked('a')).toBe(false);
    expect(lock.isLocked('b')).toBe(true);
    leaseOf(b).release();
    expect(lock.size).toBe(0);
  });

  it('works with non-string keys, compared as Map keys', async () => {
    const lock = new KeyedLock<object | number>();
    const objKey = {};
    const l1 = await lock.acquire(objKey);
    const l2 = await lock.acquire({}); // a different object is a different key
    const nan = await lock.acquire(Number.NaN);
    const nan2 = track(lock.acquire(Number.NaN)); // NaN is one key
    await flush();
    expect(nan2.state).toBe('pending');
    expect(lock.isLocked(objKey)).toBe(true);
    expect(l1.key).toBe(objKey);
    nan.release();
    await flush();
    leaseOf(nan2).release();
    l1.release();
    l2.release();
    expect(lock.size).toBe(0);
  });
});

describe('release', () => {
  it('is idempotent: a second call does not release the next holder', async () => {
    const lock = new KeyedLock();
    const a = await lock.acquire('k');
    const b = track(lock.acquire('k'));
    const c = track(lock.acquire('k'));
    a.release();
    await flush();
    expect(b.state).toBe('fulfilled');
    a.release();
    a[Symbol.dispose]();
    await flush();
    expect(c.state).toBe('pending');
    expect(lock.isLocked('k')).toBe(true);
    expect(lock.waiting('k')).toBe(1);
    leaseOf(b).release();
    await flush();
    expect(c.state).toBe('fulfilled');
    leaseOf(c).release();
    leaseOf(c).release();
    expect(lock.size).toBe(0);
  });

  it('hands the lock over synchronously, so no newcomer can barge in', async () => {
    const lock = new KeyedLock();
    const a = await lock.acquire('k');
    const b = track(lock.acquire('k'));
    a.release();
    // b owns the lock from the release on, before its promise reaction runs.
    expect(lock.isLocked('k')).toBe(true);
    const late = track(lock.acquire('k'));
    await flush();
    expect(b.state).toBe('fulfilled');
    expect(late.state).toBe('pending');
    leaseOf(b).release();
    await flush();
    leaseOf(late).release();
    expect(lock.size).toBe(0);
  });
});

describe('using', () => {
  it('releases at the end of the block', async () => {
    const lock = new KeyedLock();
    {
      using lease = await lock.acquire('k');
      expect(lease.key).toBe('k');
      expect(lock.isLocked('k')).toBe(true);
    }
    expect(lock.isLocked('k')).toBe(false);
    expect(lock.size).toBe(0);
  });

  it('releases when the block throws', async () => {
    const lock = new KeyedLock();
    const body = async () => {
      using _lease = await lock.acquire('k');
      throw new Error('boom');
    };
    await expect(body()).rejects.toThrow('boom');
    expect(lock.isLocked('k')).toBe(false);
  });
});

describe('run', () => {
  it('returns what fn returns and releases', async () => {
    const lock = new KeyedLock();
    await expect(lock.run('k', () => 42)).resolves.toBe(42);
    await expect(lock.run('k', async () => 'x')).resolves.toBe('x');
    expect(lock.size).toBe(0);
  });

  it('holds the lock while fn runs', async () => {
    const lock = new KeyedLock();
    let seen = false;
    await lock.run('k', async () => {
      await flush();
      seen = lock.isLocked('k');
    });
    expect(seen).toBe(true);
  });

  it('releases when fn rejects, and passes the error on', async () => {
    const lock = new KeyedLock();
    const err = new Error('async boom');
    await expect(
      lock.run('k', async () => {
        await flush();
        throw err;
      }),
    ).rejects.toBe(err);
    expect(lock.isLocked('k')).toBe(false);
  });

  it('releases when fn throws synchronously, and the next waiter runs', async () => {
    const lock = new KeyedLock();
    const failing = lock.run('k', () => {
      throw new Error('sync boom');
    });
    const next = lock.run('k', () => 'next');
    await expect(failing).rejects.toThrow('sync boom');
    await expect(next).resolves.toBe('next');
    expect(lock.size).toBe(0);
  });
});

describe('programmer misuse', () => {
  const lock = new KeyedLock();
  const bad: unknown[] = [null, 'x', 5, true, () => undefined];

  it.each(bad)('acquire throws TypeError for opts %s', (opts) => {
    expect(() => lock.acquire('k', opts as never)).toThrow(TypeError);
    expect(lock.size).toBe(0);
  });

  it.each([{}, 'signal', 1, null, { aborted: false }])(
    'acquire throws TypeError for signal %s',
    (signal) => {
      expect(() => lock.acquire('k', { signal: signal as never })).toThrow(TypeError);
      expect(lock.size).toBe(0);
    },
  );

  it('run throws TypeError when fn is not a function, without taking the lock', () => {
    expect(() => lock.run('k', 'nope' as never)).toThrow(TypeError);
    expect(() => lock.run('k', () => 1, 'x' as never)).toThrow(TypeError);
    expect(lock.size).toBe(0);
  });

  it('accepts undefined opts and undefined signal', async () => {
    const leases: Lease[] = [
      await lock.acquire('a', undefined),
      await lock.acquire('b', {}),
      await lock.acquire('c', { signal: undefined }),
    ];
    for (const l of leases) l.release();
    expect(lock.size).toBe(0);
  });
});
