/**
 * Reading HTTP/1.1 messages off a byte stream, without I/O: where the next
 * head begins and ends (bounded in size, a broken line end refused as soon
 * as it is seen), and a body reader for each framing. A client connection
 * reads requests with these and an exchange reads its origin's answer with
 * them; the differential tests drive the same two against llhttp.
 *
 * @module
 */
import { ChunkedScanner, type PayloadSink } from './chunked.js';
import { type Framing, HeadError } from './http1.js';

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Where a head lies in a buffer: from `start` (past empty lines) to just past its CRLF CRLF. */
export interface HeadSpan {
  readonly start: number;
  readonly end: number;
}

/**
 * Finds message heads at the start of a buffer, remembering how far an
 * incomplete one has been searched. Empty lines before a head are skipped
 * (RFC 9112 §2.2) but count towards its size.
 */
export class HeadReader {
  readonly #maxBytes: number;
  #searched = 0;

  /** `maxBytes`: the largest head (empty lines before it included); larger gets 431. */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Looks for a head at the start of `buf`: its span, or undefined when more
   * bytes are needed. Throws {@link HeadError} for a head too large, and
   * for a line end other than CRLF as soon as it is seen.
   */
  find(buf: Buffer): HeadSpan | undefined {
    let start = 0;
    while (start + 1 < buf.length && buf[start] === 13 && buf[start + 1] === 10) start += 2;
    if (
      start < buf.length &&
      (buf[start] === 10 || (buf[start] === 13 && start + 1 < buf.length))
    ) {
      throw new HeadError('empty-line-bare', 'a bare CR or LF before the start line');
    }
    const at = buf.indexOf(CRLFCRLF, Math.max(start, this.#searched - 3));
    if (at >= 0) {
      this.#searched = 0;
      const end = at + 4;
      if (end - 4 > this.#maxBytes) throw new HeadError('head-size', 'a head too large', 431);
      return { start, end };
    }
    if (buf.length > this.#maxBytes) throw new HeadError('head-size', 'a head too large', 431);
    checkLineEnds(buf, Math.max(start, this.#searched - 1));
    this.#searched = buf.length;
    return undefined;
  }

  /** Forgets an incomplete search (the buffer was replaced). */
  reset(): void {
    this.#searched = 0;
  }
}

/** Throws when `buf[from..]` holds a LF without a CR before it, or a CR followed by other than LF. */
function checkLineEnds(buf: Buffer, from: number): void {
  for (let i = buf.indexOf(10, from); i >= 0; i = buf.indexOf(10, i + 1)) {
    if (i === 0 || buf[i - 1] !== 13) throw new HeadError('bare-lf', 'a bare LF in a head');
  }
  for (let i = buf.indexOf(13, from); i >= 0 && i + 1 < buf.length; i = buf.indexOf(13, i + 1)) {
    if (buf[i + 1] !== 10) throw new HeadError('bare-cr', 'a bare CR in a head');
  }
}

/** Reads one message body of a known framing as its bytes pass. */
export class BodyReader {
  readonly #kind: Framing['kind'];
  #left: number;
  readonly #chunks: ChunkedScanner | undefined;

  constructor(framing: Framing) {
    this.#kind = framing.kind;
    this.#left = framing.kind === 'length' ? framing.length : 0;
    this.#chunks = framing.kind === 'chunked' ? new ChunkedScanner() : undefined;
  }

  /** True once the whole body has passed (never for a body delimited by close). */
  get done(): boolean {
    switch (this.#kind) {
      case 'none':
        return true;
      case 'length':
        return this.#left === 0;
      case 'chunked':
        return (this.#chunks as ChunkedScanner).done;
      default:
        return false;
    }
  }

  /**
   * Reads body bytes from `buf[from, to)`; returns the index just past those
   * that belong to the body. `onData` gets each range of payload (chunked
   * framing removed). Throws {@link HeadError} for a malformed chunked body.
   */
  scan(buf: Buffer, from: number, to: number, onData?: PayloadSink): number {
    switch (this.#kind) {
      case 'length': {
        const n = Math.min(this.#left, to - from);
        this.#left -= n;
        if (n > 0) onData?.(buf, from, from + n);
        return from + n;
      }
      case 'chunked':
        return (this.#chunks as ChunkedScanner).scan(buf, from, to, onData);
      case 'close':
        if (to > from) onData?.(buf, from, to);
        return to;
      default:
        return from;
    }
  }
}
