/**
 * The chunked transfer coding (RFC 9112 §7.1), read as it passes: where a
 * chunked body ends, the payload bytes inside it, and a refusal of anything
 * llhttp would refuse (sizes, extensions, line ends, trailer fields). It
 * copies nothing: the body is forwarded as it came, so the peer behind the
 * proxy reads the very bytes that were checked here.
 *
 * @module
 */
import { HeadError } from './http1.js';

// States of the scanner.
const SIZE_FIRST = 0;
const SIZE = 1;
const EXT_START = 2;
const EXT_NAME = 3;
const EXT_VALUE_START = 4;
const EXT_VALUE = 5;
const EXT_QUOTED = 6;
const EXT_QUOTED_PAIR = 7;
const EXT_QUOTED_END = 8;
const SIZE_LF = 9;
const DATA = 10;
const DATA_CR = 11;
const DATA_LF = 12;
const TRAILER_START = 13;
const TRAILER_NAME = 14;
const TRAILER_VALUE = 15;
const TRAILER_LF = 16;
const END_LF = 17;
const DONE = 18;

/** Gets each range `buf[start, end)` of payload a body reader finds. */
export type PayloadSink = (buf: Buffer, start: number, end: number) => void;

/** The longest chunk-size line (size and extensions) accepted, in bytes. */
export const MAX_CHUNK_LINE = 4096;
/** The largest trailer section accepted, in bytes. */
export const MAX_TRAILERS = 4096;

/** tchar (RFC 9110 §5.6.2), as a lookup table. */
const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TCHAR[c] = 1;
for (let c = 65; c <= 90; c++) TCHAR[c] = 1;
for (let c = 97; c <= 122; c++) TCHAR[c] = 1;

/** Bytes a field value may hold: HTAB, SP, VCHAR, obs-text (RFC 9110 §5.5). */
function fieldChar(c: number): boolean {
  return c === 9 || (c >= 32 && c !== 127);
}

/** qdtext (RFC 9110 §5.6.4): HTAB, SP, VCHAR but `"` and `\`, obs-text. */
function qdtext(c: number): boolean {
  return c === 9 || c === 32 || c === 0x21 || (c >= 0x23 && c !== 0x5c && c !== 127);
}

/** Trailer fields refused: they frame the message or steer the connection. */
const TRAILER_REFUSED: ReadonlySet<string> = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
]);

/** The largest size before one more hex digit would pass 2^53 - 1. */
const SIZE_LIMIT = Math.floor((Number.MAX_SAFE_INTEGER - 15) / 16);

/**
 * Scans a chunked body as it passes: finds where it ends, reports the
 * payload bytes inside it, and refuses a malformed one (a
 * {@link HeadError}). Grammar as llhttp reads it, strictly:
 * `1*HEXDIG *( ";" *( ";" ) token [ "=" [ token / quoted-string ] ] ) CRLF`
 * for a size line (no whitespace anywhere), data followed by CRLF, and
 * trailer field lines that are well formed and name no framing field.
 */
export class ChunkedScanner {
  #state = SIZE_FIRST;
  #size = 0;
  #line = 0;
  #trailers = 0;
  /** The lowercased trailer field name read so far (short names only). */
  #name = '';

  /** True once the last chunk and the trailer section have passed. */
  get done(): boolean {
    return this.#state === DONE;
  }

  /**
   * Scans `buf[from, to)`; returns the index just past the body's end, or
   * `to` when the body goes on. `onData` (when given) gets each payload
   * range. Throws {@link HeadError} for a malformed body.
   */
  scan(buf: Buffer, from: number, to: number, onData?: PayloadSink): number {
    let i = from;
    while (i < to) {
      const state = this.#state;
      if (state === DATA) {
        const n = Math.min(this.#size, to - i);
        onData?.(buf, i, i + n);
        this.#size -= n;
        i += n;
        if (this.#size === 0) this.#state = DATA_CR;
        continue;
      }
      if (state === DONE) return i;
      const c = buf[i] as number;
      i++;
      if (state < DATA && ++this.#line > MAX_CHUNK_LINE) {
        throw new HeadError('chunk-line-size', 'a chunk-size line too long');
      }
      if (state >= TRAILER_START && ++this.#trailers > MAX_TRAILERS) {
        throw new HeadError('trailer-size', 'a trailer section too long');
      }
      this.#step(state, c);
      if (this.#state === DONE) return i;
    }
    return i;
  }

  #step(state: number, c: number): void {
    switch (state) {
      case SIZE_FIRST:
      case SIZE: {
        const v = hexValue(c);
        if (v >= 0) {
          if (this.#size > SIZE_LIMIT) {
            throw new HeadError('chunk-size-large', 'a chunk size past 2^53 - 1');
          }
          this.#size = this.#size * 16 + v;
          this.#state = SIZE;
        } else if (state === SIZE_FIRST) {
          throw new HeadError('chunk-size', 'a chunk size that is no hex number');
        } else if (c === 13) this.#state = SIZE_LF;
        else if (c === 59) this.#state = EXT_START;
        else throw new HeadError('chunk-size', 'a chunk size followed by other than ; or CRLF');
        return;
      }
      case EXT_START:
        if (TCHAR[c] === 1) this.#state = EXT_NAME;
        else if (c !== 59) throw new HeadError('chunk-ext', 'a chunk extension without a name');
        return;
      case EXT_NAME:
        if (TCHAR[c] === 1) return;
        if (c === 61) this.#state = EXT_VALUE_START;
        else this.#endExt(c);
        return;
      case EXT_VALUE_START:
        if (c === 34) this.#state = EXT_QUOTED;
        else if (TCHAR[c] === 1) this.#state = EXT_VALUE;
        else this.#endExt(c);
        return;
      case EXT_VALUE:
        if (TCHAR[c] !== 1) this.#endExt(c);
        return;
      case EXT_QUOTED:
        if (c === 34) this.#state = EXT_QUOTED_END;
        else if (c === 92) this.#state = EXT_QUOTED_PAIR;
        else if (!qdtext(c)) throw new HeadError('chunk-ext', 'a control in a quoted extension');
        return;
      case EXT_QUOTED_PAIR:
        if (!fieldChar(c)) throw new HeadError('chunk-ext', 'a control in a quoted-pair');
        this.#state = EXT_QUOTED;
        return;
      case EXT_QUOTED_END:
        this.#endExt(c);
        return;
      case SIZE_LF:
        if (c !== 10) throw new HeadError('chunk-size', 'a chunk-size line without CRLF');
        this.#line = 0;
        this.#state = this.#size === 0 ? TRAILER_START : DATA;
        return;
      case DATA_CR:
        if (c !== 13) throw new HeadError('chunk-data', 'chunk data longer than its size');
        this.#state = DATA_LF;
        return;
      case DATA_LF:
        if (c !== 10) throw new HeadError('chunk-data', 'chunk data without CRLF');
        this.#state = SIZE_FIRST;
        return;
      case TRAILER_START:
        if (c === 13) this.#state = END_LF;
        else if (TCHAR[c] === 1) {
          this.#name = String.fromCharCode(c | 0x20);
          this.#state = TRAILER_NAME;
        } else throw new HeadError('trailer', 'a malformed trailer field line');
        return;
      case TRAILER_NAME:
        if (TCHAR[c] === 1) {
          if (this.#name.length < 20) this.#name += String.fromCharCode(c).toLowerCase();
          return;
        }
        if (c !== 58) throw new HeadError('trailer', 'a trailer field name without a colon');
        // Fields that frame a message or steer its connection do not belong after it
        // (RFC 9110 §6.5.1); llhttp would act on some of them.
        if (TRAILER_REFUSED.has(this.#name)) {
          throw new HeadError('trailer-framing', 'a framing field in the trailer section');
        }
        this.#state = TRAILER_VALUE;
        return;
      case TRAILER_VALUE:
        if (c === 13) this.#state = TRAILER_LF;
        else if (!fieldChar(c)) throw new HeadError('trailer', 'a control in a trailer value');
        return;
      case TRAILER_LF:
        if (c !== 10) throw new HeadError('trailer', 'a trailer line without CRLF');
        this.#state = TRAILER_START;
        return;
      case END_LF:
        if (c !== 10) throw new HeadError('trailer', 'a chunked body not ending in CRLF');
        this.#state = DONE;
        return;
    }
  }

  /** After an extension: another one, or the end of the size line. */
  #endExt(c: number): void {
    if (c === 59) this.#state = EXT_START;
    else if (c === 13) this.#state = SIZE_LF;
    else throw new HeadError('chunk-ext', 'a malformed chunk extension');
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}
