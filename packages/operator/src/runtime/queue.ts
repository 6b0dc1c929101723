/**
 * A work queue with controller-runtime's semantics: it holds keys only,
 * merges duplicates, never hands one key to two workers at once, retries
 * failures with per-key exponential backoff (with jitter and bounds), honours
 * `requeueAfter`, and stops retrying on a terminal error.
 *
 * @module
 */
import { TerminalError } from '../errors.js';

/** What a reconcile asks of the queue when it succeeds. */
export interface ReconcileResult {
  /** Run this key again after this many milliseconds (0: as soon as possible). */
  readonly requeueAfter?: number | undefined;
}

/** Backoff bounds of the per-key rate limiter. */
export interface BackoffOptions {
  /** The first retry's delay in ms. */
  readonly baseMs: number;
  /** The longest delay in ms. */
  readonly maxMs: number;
  /** Jitter as a fraction of the delay, spread both ways. */
  readonly jitter: number;
  /** Random source in [0, 1), for tests. */
  readonly random?: () => number;
}

/**
 * Per-key exponential backoff: the n-th consecutive failure of a key waits
 * `base * 2^(n-1)`, spread by ±jitter and capped at `max`. `forget` resets a
 * key.
 */
export class Backoff {
  readonly #failures = new Map<string, number>();
  readonly #base: number;
  readonly #max: number;
  readonly #jitter: number;
  readonly #random: () => number;

  constructor(opts: BackoffOptions) {
    this.#base = opts.baseMs;
    this.#max = opts.maxMs;
    this.#jitter = opts.jitter;
    this.#random = opts.random ?? Math.random;
    if (
      !(this.#base > 0) ||
      !(this.#max >= this.#base) ||
      !(this.#jitter >= 0 && this.#jitter < 1)
    ) {
      throw new RangeError('Backoff: need 0 < baseMs <= maxMs and 0 <= jitter < 1');
    }
  }

  /** Records a failure of `key` and returns how long to wait before the retry. */
  next(key: string): number {
    const n = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, n);
    const raw = Math.min(this.#max, this.#base * 2 ** Math.min(n - 1, 52));
    const spread = raw * this.#jitter * (this.#random() * 2 - 1);
    return Math.round(Math.min(this.#max, Math.max(0, raw + spread)));
  }

  /** Consecutive failures recorded for `key`. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Resets `key`. */
  forget(key: string): void {
    this.#failures.delete(key);
  }
}

/** What the queue runs for each key. */
export type Handler = (key: string) => Promise<ReconcileResult | undefined>;

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Concurrent workers. */
  readonly workers: number;
  /** Backoff of failed keys. */
  readonly backoff: BackoffOptions | Backoff;
  /** Told about every failure (logging, metrics). */
  readonly onError?: (key: string, err: unknown, retryInMs: number | undefined) => void;
  /** Told about every finished run. */
  readonly onDone?: (key: string, ms: number, outcome: 'success' | 'error' | 'terminal') => void;
}

/**
 * The work queue and its workers. Keys added while a key is being processed
 * are merged into one more run after it; delayed adds keep the earliest
 * deadline per key.
 */
export class WorkQueue {
  readonly #queue: string[] = [];
  #head = 0;
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();
  readonly #backoff: Backoff;
  readonly #workers: number;
  readonly #opts: WorkQueueOptions;
  #handler: Handler | undefined;
  #running = 0;
  #stopped = false;
  #idleWaiters: Array<() => void> = [];

  constructor(opts: WorkQueueOptions) {
    this.#workers = opts.workers;
    if (!Number.isInteger(this.#workers) || this.#workers < 1) {
      throw new RangeError('WorkQueue: workers must be a positive integer');
    }
    this.#backoff = opts.backoff instanceof Backoff ? opts.backoff : new Backoff(opts.backoff);
    this.#opts = opts;
  }

  /** Keys waiting to run (not counting delayed or in-flight keys). */
  get length(): number {
    return this.#queue.length - this.#head;
  }

  /** Keys being processed right now. */
  get inFlight(): number {
    return this.#processing.size;
  }

  /** Keys waiting on a timer (backoff or requeueAfter). */
  get delayed(): number {
    return this.#timers.size;
  }

  /** The backoff, for inspection. */
  get backoff(): Backoff {
    return this.#backoff;
  }

  /** Adds `key` now. A key already waiting is not added twice. */
  add(key: string): void {
    if (this.#stopped) return;
    const t = this.#timers.get(key);
    if (t !== undefined) {
      clearTimeout(t.timer);
      this.#timers.delete(key);
    }
    if (this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (!this.#processing.has(key)) {
      this.#queue.push(key);
      this.#pump();
    }
  }

  /** Adds `key` after `ms`; a key already due earlier keeps its earlier time. */
  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.#timers.get(key);
    if (existing !== undefined) {
      if (existing.at <= at) return;
      clearTimeout(existing.timer);
    }
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref?.();
    this.#timers.set(key, { at, timer });
  }

  /** Adds `key` after its next backoff delay; returns the delay. */
  addRateLimited(key: string): number {
    const ms = this.#backoff.next(key);
    this.addAfter(key, ms);
    return ms;
  }

  /** Resets `key`'s backoff. */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  /** Starts the workers with `handler`. */
  start(handler: Handler): void {
    if (this.#handler !== undefined) throw new Error('WorkQueue: already started');
    this.#handler = handler;
    this.#pump();
  }

  /** Resolves when nothing is queued or in flight (delayed keys may remain). */
  idle(): Promise<void> {
    if (this.length === 0 && this.#running === 0) return Promise.resolve();
    return new Promise((r) => this.#idleWaiters.push(r));
  }

  /** Stops taking keys, cancels timers, and waits for in-flight work to finish. */
  async shutdown(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t.timer);
    this.#timers.clear();
    this.#queue.length = 0;
    this.#head = 0;
    this.#dirty.clear();
    await this.idle();
  }

  #pump(): void {
    const handler = this.#handler;
    if (handler === undefined) return;
    while (this.#running < this.#workers && this.length > 0) {
      const key = this.#queue[this.#head++] as string;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue.splice(0, this.#head);
        this.#head = 0;
      }
      this.#dirty.delete(key);
      this.#processing.add(key);
      this.#running++;
      void this.#process(handler, key);
    }
    if (this.length === 0 && this.#running === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  async #process(handler: Handler, key: string): Promise<void> {
    const started = performance.now();
    let outcome: 'success' | 'error' | 'terminal' = 'success';
    let requeueAfter: number | undefined;
    let failure: unknown;
    try {
      const result = await handler(key);
      this.#backoff.forget(key);
      requeueAfter = result?.requeueAfter;
    } catch (err) {
      failure = err;
      if (TerminalError.isInstance(err)) {
        outcome = 'terminal';
        this.#backoff.forget(key);
      } else {
        outcome = 'error';
      }
    }
    this.#processing.delete(key);
    this.#running--;
    if (this.#dirty.has(key) && !this.#stopped) this.#queue.push(key);
    if (requeueAfter !== undefined) this.addAfter(key, requeueAfter);
    if (outcome === 'error') {
      const ms = this.#stopped ? undefined : this.addRateLimited(key);
      this.#opts.onError?.(key, failure, ms);
    } else if (outcome === 'terminal') {
      this.#opts.onError?.(key, failure, undefined);
    }
    this.#opts.onDone?.(key, performance.now() - started, outcome);
    this.#pump();
  }
}
