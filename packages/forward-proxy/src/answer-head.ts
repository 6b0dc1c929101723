/**
 * An origin's (or a parent's) answer head, read, and framed for the client: the
 * head the proxy sends, with the framing fields its own, and how the body
 * is passed (a chunked body decoded for an HTTP/1.0 client, a
 * close-delimited one sent chunked to an HTTP/1.1 client), and whether the
 * client connection is kept.
 *
 * @module
 */
import { httpDate } from './http-date.js';
import {
  endToEndFields,
  HeadError,
  parseResponseHead,
  type RequestHead,
  type ResponseHead,
} from './http1.js';
import type { HeadReader } from './reader.js';

/**
 * The next answer head in `buf` (read by `heads`) for a request of
 * `method`: the head and where it ends, undefined while it is not whole,
 * or why it cannot be read.
 */
export function nextAnswerHead(
  heads: HeadReader,
  buf: Buffer,
  method: string,
): { res: ResponseHead; end: number } | { error: 'HeadTooLarge' | 'BadResponse' } | undefined {
  try {
    const span = heads.find(buf);
    if (span === undefined) return undefined;
    const res = parseResponseHead(buf.toString('latin1', span.start, span.end - 4), method);
    return { res, end: span.end };
  } catch (err) {
    return {
      error: err instanceof HeadError && err.status === 431 ? 'HeadTooLarge' : 'BadResponse',
    };
  }
}

/** No field left out of an answer's end-to-end fields. */
export const SKIP_NONE: ReadonlySet<string> = new Set();
const SKIP_LENGTH: ReadonlySet<string> = new Set(['content-length']);

/** An answer's head for the client, and how its body goes. */
export interface ClientAnswer {
  /** The status line and fields, ending with the blank line. */
  readonly head: string;
  /** A chunked body is decoded (for an HTTP/1.0 client). */
  readonly decode: boolean;
  /** A close-delimited body is sent chunked (to an HTTP/1.1 client). */
  readonly rechunk: boolean;
  /** The client connection serves another request after this one. */
  readonly keepClient: boolean;
}

/**
 * The head of `res` for the client that sent `req`; `closing` (the proxy
 * is shutting down) closes the client connection; `fields` are header
 * lines of the proxy's own to add (each ending in CRLF).
 */
export function clientAnswer(
  res: ResponseHead,
  req: RequestHead,
  closing: boolean,
  fields: string,
): ClientAnswer {
  const oneZero = req.minor === 0;
  const f = res.framing;
  let framing = '';
  let decode = false;
  let rechunk = false;
  if (f.kind === 'length') {
    framing = `Content-Length: ${f.length}\r\n`;
  } else if (f.kind === 'chunked') {
    decode = oneZero;
    if (!oneZero) framing = `Transfer-Encoding: ${res.transferEncoding}\r\n`;
  } else if (f.kind === 'close') {
    rechunk = !oneZero;
    if (rechunk) framing = 'Transfer-Encoding: chunked\r\n';
  }
  const keepClient =
    req.keepAlive && !closing && !(oneZero && (f.kind === 'close' || f.kind === 'chunked'));
  const connection = !keepClient
    ? 'Connection: close\r\n'
    : oneZero
      ? 'Connection: keep-alive\r\n'
      : '';
  // The framing fields are ours: a Content-Length the body does not follow is never passed on.
  const skip = f.kind === 'none' ? SKIP_NONE : SKIP_LENGTH;
  const head =
    `HTTP/1.1 ${res.status} ${res.reason}\r\n${endToEndFields(res, skip)}${fields}${framing}` +
    `${res.hasDate ? '' : `Date: ${httpDate()}\r\n`}${connection}\r\n`;
  return { head, decode, rechunk, keepClient };
}
