/**
 * HTTP/1.1 message heads and body framing for the forward proxy (RFC 9112):
 * request and response heads parsed strictly from the bytes, the absolute
 * URI of a proxy request, hop-by-hop fields dropped on the way through, and
 * a chunked-body scanner that finds where a message ends without copying it.
 *
 * @module
 */
import { isIP } from 'node:net';

/** A header field section: raw names, lowercased names and values, in order. */
export interface Fields {
  readonly names: string[];
  readonly lower: string[];
  readonly values: string[];
}

/** How a message body is delimited. */
export type Framing =
  | { readonly kind: 'none' }
  | { readonly kind: 'length'; readonly length: number }
  | { readonly kind: 'chunked' }
  /** Response only: the body ends when the origin closes the connection. */
  | { readonly kind: 'close' };

/** What both heads share. */
interface Head {
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minor: number;
  readonly fields: Fields;
  readonly framing: Framing;
  /** The value of Transfer-Encoding when the body is chunked (forwarded as it came). */
  readonly transferEncoding: string;
  /** Lowercased tokens of the Connection field. */
  readonly connection: readonly string[];
  /** True when the peer keeps the connection open after this message. */
  readonly keepAlive: boolean;
}

/** A parsed request head. */
export interface RequestHead extends Head {
  readonly method: string;
  readonly target: string;
  /** `Expect: 100-continue` was sent. */
  readonly expectContinue: boolean;
}

/** A parsed response head. */
export interface ResponseHead extends Head {
  readonly status: number;
  readonly reason: string;
  /** The response carries a Date field. */
  readonly hasDate: boolean;
}

/** Why a head was refused: the text is for diagnostics, never sent to a peer as is. */
export class HeadError extends Error {
  override get name(): string {
    return 'HeadError';
  }
}

/** Fields a proxy never forwards (RFC 9110 §7.6.1), besides those the Connection field names. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

const CRLFCRLF = Buffer.from('\r\n\r\n');
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([^ ]+) HTTP\/1\.([01])$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: (.*))?$/;
const DIGITS = /^\d+$/;

/**
 * Where the head that starts at `from` ends (the index just past its empty
 * line), or -1 when it is not complete yet. `searchFrom` lets a caller that
 * has already searched part of the buffer skip it.
 */
export function headEnd(buf: Buffer, from: number, searchFrom = from): number {
  const at = buf.indexOf(CRLFCRLF, Math.max(from, searchFrom - 3));
  return at < 0 ? -1 : at + 4;
}

/** Parses a request head (without its final CRLF CRLF). Throws {@link HeadError}. */
export function parseRequestHead(text: string): RequestHead {
  const lineEnd = text.indexOf('\r\n');
  const line = lineEnd < 0 ? text : text.slice(0, lineEnd);
  const m = REQUEST_LINE.exec(line);
  if (m === null) throw new HeadError('malformed request line');
  const method = m[1] as string;
  const target = m[2] as string;
  if (hasControl(target, 32)) throw new HeadError('a control character in the request target');
  const minor = Number(m[3]);
  const fields = parseFields(text, lineEnd < 0 ? text.length : lineEnd + 2);
  const f = frame(fields, minor, true);
  let expectContinue = false;
  for (let i = 0; i < fields.lower.length; i++) {
    if (fields.lower[i] === 'expect' && fields.values[i]?.toLowerCase() === '100-continue') {
      expectContinue = true;
    }
  }
  return { method, target, minor, fields, ...f, expectContinue };
}

/**
 * Parses a response head (without its final CRLF CRLF) to a request with
 * `method`. Throws {@link HeadError}.
 */
export function parseResponseHead(text: string, method: string): ResponseHead {
  const lineEnd = text.indexOf('\r\n');
  const line = lineEnd < 0 ? text : text.slice(0, lineEnd);
  const m = STATUS_LINE.exec(line);
  if (m === null) throw new HeadError('malformed status line');
  const reason = m[3] ?? '';
  if (hasControl(reason, 9)) throw new HeadError('a control character in the reason phrase');
  const minor = Number(m[1]);
  const status = Number(m[2]);
  const fields = parseFields(text, lineEnd < 0 ? text.length : lineEnd + 2);
  const f = frame(fields, minor, false);
  // No body, whatever the fields say (RFC 9112 §6.3).
  const bodiless = method === 'HEAD' || status < 200 || status === 204 || status === 304;
  return {
    minor,
    status,
    reason,
    fields,
    ...f,
    framing: bodiless ? { kind: 'none' } : f.framing,
    hasDate: fields.lower.includes('date'),
  };
}

function parseFields(text: string, start: number): Fields {
  const names: string[] = [];
  const lower: string[] = [];
  const values: string[] = [];
  let at = start;
  while (at < text.length) {
    let end = text.indexOf('\r\n', at);
    if (end < 0) end = text.length;
    const colon = text.indexOf(':', at);
    if (colon < 0 || colon > end) throw new HeadError('a field line without a colon');
    const name = text.slice(at, colon);
    // A name with whitespace (before the colon, or an obs-fold line) is refused.
    if (!TOKEN.test(name)) throw new HeadError('a malformed field name');
    const value = trimOws(text.slice(colon + 1, end));
    if (hasControl(value, 9)) throw new HeadError('a control character in a field value');
    names.push(name);
    lower.push(name.toLowerCase());
    values.push(value);
    at = end + 2;
  }
  return { names, lower, values };
}

/**
 * True when `s` holds a control character (DEL, or below 0x20) other than
 * `allowed`: field values may hold tabs (and obs-text), targets nothing.
 */
function hasControl(s: string, allowed: number): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 32 && c !== allowed) || c === 127) return true;
  }
  return false;
}

function trimOws(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
  while (b > a && (v.charCodeAt(b - 1) === 32 || v.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === v.length ? v : v.slice(a, b);
}

function frame(
  fields: Fields,
  minor: number,
  request: boolean,
): Pick<Head, 'framing' | 'transferEncoding' | 'connection' | 'keepAlive'> {
  let length = -1;
  let te = '';
  let connection: string[] = [];
  for (let i = 0; i < fields.lower.length; i++) {
    const name = fields.lower[i];
    const value = fields.values[i] as string;
    if (name === 'content-length') {
      // Repeated or listed values must all agree (RFC 9112 §6.3 step 5).
      for (const part of value.split(',')) {
        const v = trimOws(part);
        if (!DIGITS.test(v) || v.length > 15) throw new HeadError('a malformed Content-Length');
        const n = Number(v);
        if (length >= 0 && n !== length) throw new HeadError('conflicting Content-Length values');
        length = n;
      }
    } else if (name === 'transfer-encoding') {
      te = te === '' ? value : `${te}, ${value}`;
    } else if (name === 'connection') {
      for (const t of value.split(',')) {
        const token = trimOws(t).toLowerCase();
        if (token !== '') connection.push(token);
      }
    }
  }
  if (connection.length === 0) connection = EMPTY;
  const close = connection.includes('close');
  const keepAlive = !close && (minor === 1 || connection.includes('keep-alive'));
  if (te !== '') {
    const codings = te.split(',').map((c) => trimOws(c).toLowerCase());
    const chunked = codings[codings.length - 1] === 'chunked';
    if (request) {
      // A request whose length cannot be known, or that says it twice, is refused.
      if (length >= 0) throw new HeadError('both Transfer-Encoding and Content-Length');
      if (!chunked) throw new HeadError('a request Transfer-Encoding that does not end in chunked');
      if (minor === 0) throw new HeadError('Transfer-Encoding in an HTTP/1.0 request');
    }
    // A response: Transfer-Encoding overrides Content-Length (RFC 9112 §6.3 step 3).
    return chunked
      ? { framing: CHUNKED, transferEncoding: te, connection, keepAlive }
      : { framing: UNTIL_CLOSE, transferEncoding: '', connection, keepAlive: false };
  }
  if (length >= 0) {
    return { framing: { kind: 'length', length }, transferEncoding: '', connection, keepAlive };
  }
  return request
    ? { framing: NONE, transferEncoding: '', connection, keepAlive }
    : { framing: UNTIL_CLOSE, transferEncoding: '', connection, keepAlive: false };
}

const EMPTY: string[] = [];
const NONE: Framing = { kind: 'none' };
const CHUNKED: Framing = { kind: 'chunked' };
const UNTIL_CLOSE: Framing = { kind: 'close' };

/** The origin a proxy request names, and what is sent to it. */
export interface HttpTarget {
  /** Host to connect to: lowercased, without brackets. */
  readonly host: string;
  readonly port: number;
  /** The Host field sent to the origin (`host[:port]`, brackets kept). */
  readonly authority: string;
  /** The origin-form target sent to the origin: path and query, never the fragment. */
  readonly path: string;
  /** For the access log: scheme, host and path, never the query. */
  readonly logTarget: string;
}

/** Why an absolute URI is not forwarded. */
export type TargetProblem = 'not-a-url' | 'not-http';

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const REG_NAME = /^[A-Za-z0-9._~-]+$/;

/** Parses the absolute-form target of a proxy request (`http://host[:port]/path?query`). */
export function parseHttpTarget(target: string): HttpTarget | TargetProblem {
  const scheme = SCHEME.exec(target);
  if (scheme === null) return 'not-a-url';
  if ((scheme[1] as string).toLowerCase() !== 'http') return 'not-http';
  if (!target.startsWith('//', 5)) return 'not-a-url';
  let end = 7;
  while (end < target.length) {
    const c = target.charCodeAt(end);
    if (c === 47 || c === 63 || c === 35) break; // '/', '?', '#'
    end++;
  }
  let authority = target.slice(7, end);
  const at = authority.lastIndexOf('@');
  if (at >= 0) authority = authority.slice(at + 1); // userinfo is never forwarded
  let host: string;
  let portText = '';
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close < 0) return 'not-a-url';
    host = authority.slice(1, close).toLowerCase();
    if (isIP(host) !== 6) return 'not-a-url';
    const rest = authority.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return 'not-a-url';
    portText = rest.slice(1);
  } else {
    const colon = authority.indexOf(':');
    host = (colon < 0 ? authority : authority.slice(0, colon)).toLowerCase();
    portText = colon < 0 ? '' : authority.slice(colon + 1);
    if (!REG_NAME.test(host)) return 'not-a-url';
  }
  let port = 80;
  if (portText !== '') {
    if (!DIGITS.test(portText) || portText.length > 5) return 'not-a-url';
    port = Number(portText);
    if (port < 1 || port > 65535) return 'not-a-url';
  }
  let path = target.slice(end);
  const hash = path.indexOf('#');
  if (hash >= 0) path = path.slice(0, hash);
  if (path === '' || path.startsWith('?')) path = `/${path}`;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const hostPort = port === 80 ? shownHost : `${shownHost}:${port}`;
  const query = path.indexOf('?');
  return {
    host,
    port,
    authority: hostPort,
    path,
    logTarget: `http://${hostPort}${query < 0 ? path : path.slice(0, query)}`,
  };
}

/** `host:port` of a CONNECT request, or undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(authority);
  if (m === null) return undefined;
  const host = m[1] ?? m[2] ?? '';
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined && isIP(host) !== 6) return undefined;
  return { host, port };
}

/**
 * Appends the end-to-end fields of `head` as `Name: value` lines: every
 * hop-by-hop field, every field the Connection field names and every field
 * in `skip` is left out.
 */
export function endToEndFields(head: Head, skip: ReadonlySet<string>): string {
  const { names, lower, values } = head.fields;
  const named = head.connection;
  let out = '';
  for (let i = 0; i < lower.length; i++) {
    const n = lower[i] as string;
    if (HOP_BY_HOP.has(n) || skip.has(n) || (named.length > 0 && named.includes(n))) continue;
    out += `${names[i]}: ${values[i]}\r\n`;
  }
  return out;
}

/** The values of a field, joined as one list (`a, b`), or '' when absent. */
export function fieldList(head: Head, name: string): string {
  const { lower, values } = head.fields;
  let out = '';
  for (let i = 0; i < lower.length; i++) {
    if (lower[i] === name) out = out === '' ? (values[i] as string) : `${out}, ${values[i]}`;
  }
  return out;
}

// ---- chunked bodies -------------------------------------------------------------------------

const SIZE = 0;
const EXT = 1;
const SIZE_LF = 2;
const DATA = 3;
const DATA_CR = 4;
const DATA_LF = 5;
const TRAILER = 6;
const TRAILER_LF = 7;
const DONE = 8;

/** The longest chunk-size line (size, extensions) or trailer section accepted. */
const MAX_LINE = 4096;

/**
 * Scans a chunked body as it passes (RFC 9112 §7.1): finds where it ends,
 * reports the payload bytes inside it, and refuses a malformed one. It
 * copies nothing.
 */
export class ChunkedScanner {
  private state = SIZE;
  private size = 0;
  private digits = 0;
  private line = 0;
  private trailerLine = 0;

  /** True once the last chunk and the trailer section have passed. */
  get done(): boolean {
    return this.state === DONE;
  }

  /**
   * Scans `buf[from, to)`; returns the index just past the body's end, or
   * `to` when the body goes on. `onData` (when given) gets each payload
   * range. Throws {@link HeadError} for a malformed body.
   */
  scan(
    buf: Buffer,
    from: number,
    to: number,
    onData?: (buf: Buffer, start: number, end: number) => void,
  ): number {
    let i = from;
    while (i < to) {
      switch (this.state) {
        case SIZE: {
          const c = buf[i] as number;
          const v = hexValue(c);
          if (v >= 0) {
            if (++this.digits > 12) throw new HeadError('a chunk size too large');
            this.size = this.size * 16 + v;
          } else if (this.digits === 0) {
            throw new HeadError('a malformed chunk size');
          } else if (c === 13) {
            this.state = SIZE_LF;
          } else if (c === 59 || c === 32 || c === 9) {
            this.state = EXT; // chunk extensions (and whitespace before them) are skipped
          } else {
            throw new HeadError('a malformed chunk size');
          }
          i++;
          break;
        }
        case EXT: {
          const cr = buf.indexOf(13, i);
          const stop = cr < 0 || cr >= to ? to : cr;
          this.line += stop - i;
          if (this.line > MAX_LINE) throw new HeadError('a chunk extension too long');
          i = stop;
          if (i < to) {
            this.state = SIZE_LF;
            i++;
          }
          break;
        }
        case SIZE_LF:
          if (buf[i] !== 10) throw new HeadError('a chunk size line without CRLF');
          i++;
          this.line = 0;
          this.digits = 0;
          if (this.size === 0) {
            this.state = TRAILER;
            this.trailerLine = 0;
          } else {
            this.state = DATA;
          }
          break;
        case DATA: {
          const n = Math.min(this.size, to - i);
          onData?.(buf, i, i + n);
          this.size -= n;
          i += n;
          if (this.size === 0) this.state = DATA_CR;
          break;
        }
        case DATA_CR:
          if (buf[i] !== 13) throw new HeadError('chunk data longer than its size');
          this.state = DATA_LF;
          i++;
          break;
        case DATA_LF:
          if (buf[i] !== 10) throw new HeadError('chunk data without CRLF');
          this.state = SIZE;
          i++;
          break;
        case TRAILER: {
          // Trailer lines until an empty one; the section is bounded in size.
          const c = buf[i] as number;
          i++;
          if (c === 13) this.state = TRAILER_LF;
          else {
            this.trailerLine++;
            if (++this.line > MAX_LINE) throw new HeadError('a trailer section too long');
          }
          break;
        }
        case TRAILER_LF:
          if (buf[i] !== 10) throw new HeadError('a trailer line without CRLF');
          i++;
          if (this.trailerLine === 0) {
            this.state = DONE;
            return i;
          }
          this.trailerLine = 0;
          this.state = TRAILER;
          break;
        default:
          return i;
      }
    }
    return i;
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}
