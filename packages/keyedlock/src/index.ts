/**
 * A one-slot async lock per key: at most one holder per key, waiters of a key
 * served in arrival order, different keys independent of each other.
 *
 * @packageDocumentation
 */

const BRAND: unique symbol = Symbol.for('@proxy-op/keyedlock.LockAbortedError');

/**
 * Rejection of {@link KeyedLock.acquire} (and {@link KeyedLock.run}) when its
 * `signal` was aborted before the lock was granted. The lock was not taken.
 *
 * The signal's `reason` is kept as `cause`. Check it with
 * {@link LockAbortedError.isInstance}, which also recognises an error made by
 * another installed copy of this package, or with `err.code === 'LOCK_ABORTED'`.
 */
export class LockAbortedError extends Error {
  /** Always `'LockAbortedError'`. */
  override readonly name = 'LockAbortedError' as const;
  /** Stable code for this error; never changes within a major version. */
  readonly code = 'LOCK_ABORTED' as const;
  /** The key whose lock was being waited for. */
  readonly key: unknown;
  /** The abort signal's `reason`. */
  declare readonly cause: unknown;
  /** @internal Cross-copy brand, see {@link LockAbortedError.isInstance}. */
  get [BRAND](): true {
    return true;
  }

  /**
   * @param key - The key whose lock was being waited for.
   * @param reason - The abort signal's `reason`, kept as `cause`.
   */
  constructor(key: unknown, reason: unknown) {
    super('waiting for the lock was aborted', { cause: reason });
    this.key = key;
  }

  /**
   * Tells whether `value` is a `LockAbortedError`, including one created by a
   * different copy of this package (where `instanceof` would say no).
   */
  static isInstance(value: unknown): value is LockAbortedError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true
    );
  }
}

/**
 * The right to hold one key's lock, returned by {@link KeyedLock.acquire}.
 * Release it exactly once when done, or let `using` do it.
 *
 * @example
 * ```ts
 * {
 *   using lease = await lock.acquire('vm-1');
 *   // ... the lock on 'vm-1' is held here
 * } // released here, even if the block throws
 * ```
 */
export interface Lease<K = string> extends Disposable {
  /** The key this lease holds. */
  readonly key: K;
  /**
   * Releases the lock, handing it to the next waiter of the key if there is
   * one. Calling it again is a no-op: a stale lease can never release a lock
   * that has since passed to someone else.
   */
  release(): void;
  /** Same as {@link Lease.release}; lets `using` release the lease. */
  [Symbol.dispose](): void;
}

/** Options of {@link KeyedLock.acquire} and {@link KeyedLock.run}. */
export interface AcquireOptions {
  /**
   * Gives up waiting when aborted: the returned promise rejects with a
   * {@link LockAbortedError} and the waiter leaves the queue without ever
   * holding the lock. Aborting after the lock was granted has no effect; the
   * lease must still be released.
   */
  signal?: AbortSignal | undefined;
}

/** One queued `acquire` call, in a doubly linked list per key. */
interface Waiter<K> {
  readonly resolve: (lease: Lease<K>) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
  prev: Waiter<K> | undefined;
  next: Waiter<K> | undefined;
  queued: boolean;
}

/**
 * The state of a key that is held. A key is in the map exactly while someone
 * holds its lock; its waiters queue here.
 */
interface Slot<K> {
  head: Waiter<K> | undefined;
  tail: Waiter<K> | undefined;
  count: number;
}

class Hold<K> implements Lease<K> {
  readonly key: K;
  #slots: Map<K, Slot<K>> | undefined;

  constructor(slots: Map<K, Slot<K>>, key: K) {
    this.key = key;
    this.#slots = slots;
  }

  release(): void {
    const slots = this.#slots;
    if (slots === undefined) return;
    this.#slots = undefined;
    handOver(slots, this.key);
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

function unlink<K>(slot: Slot<K>, w: Waiter<K>): void {
  if (w.prev === undefined) slot.head = w.next;
  else w.prev.next = w.next;
  if (w.next === undefined) slot.tail = w.prev;
  else w.next.prev = w.prev;
  w.prev = undefined;
  w.next = undefined;
  w.queued = false;
  slot.count--;
}

/**
 * Passes the lock on `key` from its current holder to the first waiter whose
 * signal has not fired, or frees the key when there is none. A waiter whose
 * signal is already aborted but whose abort listener has not run yet (the
 * holder released from an earlier listener on the same signal) is rejected
 * here rather than handed a lock it would never see.
 */
function handOver<K>(slots: Map<K, Slot<K>>, key: K): void {
  const slot = slots.get(key);
  if (slot === undefined) return;
  for (let w = slot.head; w !== undefined; w = slot.head) {
    unlink(slot, w);
    const signal = w.signal;
    if (signal !== undefined) {
      signal.removeEventListener('abort', w.onAbort);
      if (signal.aborted) {
        w.reject(new LockAbortedError(key, signal.reason));
        continue;
      }
    }
    w.resolve(new Hold(slots, key));
    return;
  }
  slots.delete(key);
}

function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as Partial<AbortSignal>;
  return (
    typeof s.aborted === 'boolean' &&
    typeof s.addEventListener === 'function' &&
    typeof s.removeEventListener === 'function'
  );
}

function readSignal(method: string, opts: unknown): AbortSignal | undefined {
  if (opts === undefined) return undefined;
  if (typeof opts !== 'object' || opts === null) {
    throw new TypeError(`KeyedLock.${method}: opts must be an object when given`);
  }
  const { signal } = opts as { signal?: unknown };
  if (signal === undefined) return undefined;
  if (!isAbortSignal(signal)) {
    throw new TypeError(`KeyedLock.${method}: opts.signal must be an AbortSignal`);
  }
  return signal;
}

/**
 * A keyed mutex: one holder per key at a time, the key's waiters served first
 * in, first out, and different keys never blocking each other. Keys are
 * compared as `Map` keys are (SameValueZero). A key takes memory only while
 * it is held or awaited.
 *
 * The lock is not reentrant: acquiring a key you already hold waits for
 * yourself forever.
 *
 * @typeParam K - The key type; instance names by default.
 *
 * @example
 * ```ts
 * const lock = new KeyedLock();
 * await lock.run('vm-1', async () => {
 *   // only one create or delete of 'vm-1' runs at a time
 * });
 * ```
 */
export class KeyedLock<K = string> {
  readonly #slots = new Map<K, Slot<K>>();

  /** The number of keys held or awaited now (a key with waiters is always held). */
  get size(): number {
    return this.#slots.size;
  }

  /** Tells whether someone holds the lock on `key`. */
  isLocked(key: K): boolean {
    return this.#slots.has(key);
  }

  /** The number of `acquire` calls waiting for `key` (not counting the holder). */
  waiting(key: K): number {
    return this.#slots.get(key)?.count ?? 0;
  }

  /**
   * Waits for the lock on `key` and resolves with a {@link Lease} that holds
   * it. Resolves at once (in the next microtask) when the key is free.
   *
   * @param key - What to lock, e.g. an instance name.
   * @param opts - `signal` to stop waiting; see {@link AcquireOptions}.
   * @returns The lease; release it exactly once, or hold it with `using`.
   * @throws `TypeError` synchronously when `opts` is not an object or
   *   `opts.signal` is not an `AbortSignal`.
   * @throws (rejects) {@link LockAbortedError} when the signal is already
   *   aborted or fires before the lock is granted.
   */
  acquire(key: K, opts?: AcquireOptions): Promise<Lease<K>> {
    const signal = readSignal('acquire', opts);
    if (signal?.aborted === true) {
      return Promise.reject(new LockAbortedError(key, signal.reason));
    }
    const slots = this.#slots;
    const slot = slots.get(key);
    if (slot === undefined) {
      slots.set(key, { head: undefined, tail: undefined, count: 0 });
      return Promise.resolve(new Hold(slots, key));
    }
    return new Promise<Lease<K>>((resolve, reject) => {
      const waiter: Waiter<K> = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          // Node skips a listener removed during dispatch, but a duck-typed
          // signal may still call it after the hand-over dealt with us.
          if (!waiter.queued) return;
          unlink(slot, waiter);
          reject(new LockAbortedError(key, signal?.reason));
        },
        prev: slot.tail,
        next: undefined,
        queued: true,
      };
      if (slot.tail === undefined) slot.head = waiter;
      else slot.tail.next = waiter;
      slot.tail = waiter;
      slot.count++;
      if (signal !== undefined) signal.addEventListener('abort', waiter.onAbort, { once: true });
    });
  }

  /**
   * Acquires `key`, runs `fn` while holding it and releases it afterwards,
   * whether `fn` returns, throws or rejects.
   *
   * @param key - What to lock.
   * @param fn - The work to do under the lock; may be async.
   * @param opts - `signal` to stop waiting for the lock; it does not cancel
   *   `fn` once started.
   * @returns What `fn` returned (awaited).
   * @throws `TypeError` synchronously on a bad `fn` or `opts`.
   * @throws (rejects) {@link LockAbortedError} as {@link KeyedLock.acquire},
   *   or whatever `fn` threw.
   */
  run<T>(key: K, fn: () => T | PromiseLike<T>, opts?: AcquireOptions): Promise<Awaited<T>> {
    if (typeof fn !== 'function') {
      throw new TypeError('KeyedLock.run: fn must be a function');
    }
    return this.#run(this.acquire(key, opts), fn);
  }

  async #run<T>(acquired: Promise<Lease<K>>, fn: () => T | PromiseLike<T>): Promise<Awaited<T>> {
    const lease = await acquired;
    try {
      return await fn();
    } finally {
      lease.release();
    }
  }
}
