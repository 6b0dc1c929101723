/**
 * The bound on failed credential checks per source: a token bucket per
 * source (an IPv4 address, an IPv6 /64), a token taken before each check
 * that is not a kept success and given back when it succeeds. A source
 * whose bucket is empty is refused (429) without a check until a token
 * has come back; other sources are not affected. The clock is passed in.
 *
 * @module
 */

/** Buckets kept at most; the one used least recently goes first. */
const MAX_SOURCES = 65_536;

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
}

/** Failed checks per source, bounded. */
export class FailureLimit {
  readonly #burst: number;
  readonly #refillMs: number;
  readonly #buckets = new Map<string, Bucket>();

  /** `burst` failures at once per source; one more each `refillMs`. */
  constructor(burst: number, refillMs: number) {
    this.#burst = Math.max(1, burst);
    this.#refillMs = Math.max(1, refillMs);
  }

  #bucket(source: string, now: number): Bucket {
    let b = this.#buckets.get(source);
    if (b === undefined) {
      b = { tokens: this.#burst, at: now };
      if (this.#buckets.size >= MAX_SOURCES) {
        const oldest = this.#buckets.keys().next();
        if (oldest.done !== true) this.#buckets.delete(oldest.value);
      }
    } else {
      this.#buckets.delete(source); // to the end: the most recently used
      b.tokens = Math.min(this.#burst, b.tokens + (now - b.at) / this.#refillMs);
      b.at = now;
    }
    this.#buckets.set(source, b);
    return b;
  }

  /**
   * Takes a token for a check from `source`; undefined when it got one,
   * else how long until it would, in ms.
   */
  take(source: string, now: number): number | undefined {
    const b = this.#bucket(source, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return undefined;
    }
    return Math.ceil((1 - b.tokens) * this.#refillMs);
  }

  /** Gives back the token of a check that succeeded. */
  give(source: string, now: number): void {
    const b = this.#bucket(source, now);
    b.tokens = Math.min(this.#burst, b.tokens + 1);
    if (b.tokens >= this.#burst) this.#buckets.delete(source);
  }

  /** Sources with a bucket now (full ones are forgotten). */
  get size(): number {
    return this.#buckets.size;
  }
}
