// A small seeded generator for property tests (no fast-check dependency):
// the same seed gives the same cases, and a failing case names its seed.

/** A deterministic source of random numbers (mulberry32). */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }

  /** `n` random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(0, 255);
    return out;
  }

  /** A string of `n` characters drawn from `alphabet`. */
  string(n: number, alphabet: string): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[this.int(0, alphabet.length - 1)];
    return s;
  }

  /**
   * A size that favours the awkward ones: 0, around one and two sectors,
   * and otherwise anything up to `max`.
   */
  size(max: number): number {
    return this.pick([
      0,
      1,
      2047,
      2048,
      2049,
      4096,
      this.int(0, 100),
      this.int(0, max),
      this.int(0, max),
    ]);
  }
}

/** Bytes of `n` that are UTF-8 text with multi-byte characters and mixed line ends. */
export function utf8Text(r: Random, n: number): Uint8Array {
  const pieces = ['a', 'Z', ' ', '\n', '\r\n', '\r', 'é', 'ß', '€', '😀', '\t', '#', '-'];
  let s = '';
  while (Buffer.byteLength(s) < n) s += r.pick(pieces);
  return new TextEncoder().encode(s);
}
