/**
 * Reused read buffers for the connections the proxy opens itself (to
 * origins and tunnel targets, through `net.connect`'s `onread`): each read
 * lands in the connection's own buffer instead of a fresh allocation, so
 * bytes passing through neither grow the heap's external memory nor leave
 * the cache. A buffer starts small and grows while reads fill it (a bulk
 * transfer), and shrinks again when they do not (an idle or chatty
 * connection holds little). A buffer whose bytes are still queued on the
 * way out (the peer reads slowly) is lent, and comes back once they are
 * written; meanwhile the connection reads into another one.
 *
 * @module
 */
import type { Writable } from 'node:stream';

/** The smallest read buffer (what a connection holds while it is quiet). */
export const MIN_READ_BYTES = 16 * 1024;
/**
 * The largest read buffer (what a bulk transfer reads into), what libuv
 * offers a read on its own. Reads of 256 KiB took a fifth less CPU per MiB
 * through a tunnel, but the allocator kept 8 MiB more resident after them
 * (glibc serves blocks of 128 KiB and more by mmap, and after freeing one
 * raises that threshold and serves them from its heap, which it keeps).
 */
export const MAX_READ_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);
/** Free buffers of each size kept for the next reads (1 MiB of large ones at most). */
const pools = new Map<number, { keep: number; free: Buffer[] }>([
  [MIN_READ_BYTES, { keep: 16, free: [] }],
  [MAX_READ_BYTES, { keep: 16, free: [] }],
]);

function take(size: number): Buffer {
  return pools.get(size)?.free.pop() ?? Buffer.allocUnsafe(size);
}

function give(b: Buffer): void {
  const pool = pools.get(b.length);
  if (pool !== undefined && pool.free.length < pool.keep) pool.free.push(b);
}

/** The read buffer of one connection. */
export class ReadBuffer {
  #buf: Buffer = take(MIN_READ_BYTES);
  #lent = false;
  #released = false;
  /** How many bytes the last read brought. */
  #last = 0;

  /**
   * The buffer the next read goes into (for `onread.buffer`, called after
   * every read): the same one, a larger one after a read that filled it, a
   * smaller one after a read that used little of it, a fresh one when the
   * last was lent.
   */
  readonly next = (): Buffer => {
    if (this.#released) return this.#buf;
    const size = this.#buf.length;
    let want = size;
    if (this.#last === size) want = MAX_READ_BYTES;
    else if (this.#last < MIN_READ_BYTES / 2) want = MIN_READ_BYTES;
    if (want !== size || this.#lent) {
      if (!this.#lent) give(this.#buf);
      this.#lent = false;
      this.#buf = take(want);
    }
    return this.#buf;
  };

  /** A read brought `n` bytes into the current buffer. */
  got(n: number): void {
    this.#last = n;
  }

  /**
   * Bytes of the current buffer were written to `to` and are still queued
   * there: the buffer is not read into again, and goes back to the pool once
   * `to` has written them. Call after the last write of a read's bytes.
   */
  lend(to: Writable): void {
    if (this.#lent || to.writableLength === 0) return;
    this.#lent = true;
    const b = this.#buf;
    if (to.writableEnded) {
      // Nothing more may be written to a stream that has ended (a write would destroy it, and
      // what it still holds with it): the buffer is free once the stream has closed.
      to.once('close', () => give(b));
      return;
    }
    // Writes complete in order: when this empty one has, so have those before it.
    to.write(EMPTY, (err?: Error | null) => {
      if (err === undefined || err === null) give(b);
    });
  }

  /** The connection is closed: its buffer goes back, unless it is lent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (!this.#lent) give(this.#buf);
  }
}
