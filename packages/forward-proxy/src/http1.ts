/**
 * HTTP/1.1 message heads for the forward proxy (RFC 9112): request and
 * response heads parsed strictly from the bytes, their body framing, and
 * hop-by-hop fields dropped on the way through. Everything llhttp (the
 * parser Node.js runs) refuses is refused here too; what is refused beyond
 * that is named by a {@link Refusal} and listed in the README.
 *
 * @module
 */

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
  /** The transfer codings of a chunked body, normalised (`gzip, chunked`), forwarded as such. */
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

/**
 * Why a message was refused, one name per rule (the README's refusal table
 * lists those llhttp does not refuse, with the RFC 9112 text behind each).
 */
export type Refusal =
  | 'request-line'
  | 'request-line-spaces'
  | 'method'
  | 'version'
  | 'target'
  | 'empty-line-bare'
  | 'bare-lf'
  | 'bare-cr'
  | 'field-line'
  | 'field-value'
  | 'field-count'
  | 'head-size'
  | 'content-length'
  | 'content-length-repeated'
  | 'content-length-size'
  | 'te-and-cl'
  | 'te-not-chunked'
  | 'te-empty'
  | 'te-chunked-twice'
  | 'te-http10'
  | 'host-repeated'
  | 'status-line'
  | 'status-code'
  | 'reason-phrase'
  | 'interim-framing'
  | 'interim-close'
  | 'chunk-size'
  | 'chunk-size-large'
  | 'chunk-ext'
  | 'chunk-line-size'
  | 'chunk-data'
  | 'trailer'
  | 'trailer-framing'
  | 'trailer-size';

/** Why a message was refused: `reason` names the rule; the text is for diagnostics only. */
export class HeadError extends Error {
  /** The rule the message broke. */
  readonly reason: Refusal;
  /** The status a client gets for it: 400 unless the rule says otherwise. */
  readonly status: number;

  constructor(reason: Refusal, message: string, status = 400) {
    super(message);
    this.reason = reason;
    this.status = status;
  }

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

/**
 * The request methods llhttp reads in an HTTP/1.x request line (RFC 9110's,
 * WebDAV's and the other registered ones it knows); any other is refused.
 */
export const METHODS: ReadonlySet<string> = new Set(
  (
    'DELETE GET HEAD POST PUT CONNECT OPTIONS TRACE COPY LOCK MKCOL MOVE PROPFIND PROPPATCH ' +
    'SEARCH UNLOCK BIND REBIND UNBIND ACL REPORT MKACTIVITY CHECKOUT MERGE M-SEARCH NOTIFY ' +
    'SUBSCRIBE UNSUBSCRIBE PATCH PURGE MKCALENDAR LINK UNLINK SOURCE QUERY'
  ).split(' '),
);

/** Fields whose value keeps its trailing whitespace (see parseFields). */
const RAW_TAIL: ReadonlySet<string> = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d\d\d)(?: (.*))?$/;
const DIGITS = /^\d+$/;

/** Parses a request head (without its final CRLF CRLF). Throws {@link HeadError}. */
export function parseRequestHead(text: string, maxFields = Infinity): RequestHead {
  const lineEnd = text.indexOf('\r\n');
  const line = lineEnd < 0 ? text : text.slice(0, lineEnd);
  const sp1 = line.indexOf(' ');
  const sp2 = line.lastIndexOf(' ');
  if (sp1 <= 0) throw new HeadError('request-line', 'malformed request line');
  if (sp2 === sp1) throw new HeadError('version', 'a request line without a version (HTTP/0.9)');
  const method = line.slice(0, sp1);
  const target = line.slice(sp1 + 1, sp2);
  const version = line.slice(sp2 + 1);
  if (!TOKEN.test(method)) throw new HeadError('request-line', 'malformed request method');
  if (!/^HTTP\/\d\.\d$/.test(version)) throw new HeadError('request-line', 'malformed version');
  if (target === '' || target.includes(' ')) {
    throw new HeadError('request-line-spaces', 'more than one space between request-line parts');
  }
  // Only visible ASCII: no control, no space, nothing above 0x7E (RFC 3986 URIs).
  if (!visible(target)) throw new HeadError('target', 'a byte in the request target not in a URI');
  if (!METHODS.has(method)) throw new HeadError('method', 'an unknown request method', 501);
  if (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') {
    throw new HeadError('version', 'an HTTP version other than 1.0 and 1.1', 505);
  }
  const minor = version === 'HTTP/1.1' ? 1 : 0;
  const fields = parseFields(text, lineEnd < 0 ? text.length : lineEnd + 2, maxFields);
  const f = frame(fields, minor, true);
  let expectContinue = false;
  let hosts = 0;
  for (let i = 0; i < fields.lower.length; i++) {
    const name = fields.lower[i];
    if (name === 'expect' && fields.values[i]?.toLowerCase() === '100-continue') {
      expectContinue = true;
    } else if (name === 'host' && ++hosts > 1) {
      throw new HeadError('host-repeated', 'more than one Host field');
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
  if (m === null) throw new HeadError('status-line', 'malformed status line');
  const reason = m[3] ?? '';
  if (hasControl(reason, 9)) throw new HeadError('reason-phrase', 'a control in the reason phrase');
  const minor = Number(m[1]);
  const status = Number(m[2]);
  if (status < 100) throw new HeadError('status-code', 'a status code below 100');
  const fields = parseFields(text, lineEnd < 0 ? text.length : lineEnd + 2, Infinity);
  const f = frame(fields, minor, false);
  const framed =
    fields.lower.includes('content-length') || fields.lower.includes('transfer-encoding');
  if (status < 200 && framed) {
    // A 1xx answer ends with its head (RFC 9110 §15.2); llhttp reads a body after some.
    throw new HeadError('interim-framing', 'a 1xx answer with framing fields');
  }
  if (status < 200 && !f.keepAlive) {
    // llhttp reads nothing after an answer that closes the connection, a 1xx one included.
    throw new HeadError('interim-close', 'a 1xx answer that closes the connection');
  }
  // No body, whatever the fields say (RFC 9112 §6.3).
  const bodiless = method === 'HEAD' || status < 200 || status === 204 || status === 304;
  return {
    minor,
    status,
    reason,
    fields,
    ...f,
    framing: bodiless ? NONE : f.framing,
    keepAlive: f.keepAlive && (bodiless || f.framing.kind !== 'close'),
    hasDate: fields.lower.includes('date'),
  };
}

function parseFields(text: string, start: number, maxFields: number): Fields {
  const names: string[] = [];
  const lower: string[] = [];
  const values: string[] = [];
  let at = start;
  while (at < text.length) {
    if (names.length >= maxFields) throw new HeadError('field-count', 'too many fields', 431);
    let end = text.indexOf('\r\n', at);
    if (end < 0) end = text.length;
    const colon = text.indexOf(':', at);
    if (colon < 0 || colon > end) throw new HeadError('field-line', 'a field line without a colon');
    const name = text.slice(at, colon);
    // A name with whitespace (before the colon, or an obs-fold line) is refused.
    if (!TOKEN.test(name)) throw new HeadError('field-line', 'a malformed field name');
    const raw = text.slice(colon + 1, end);
    if (hasControl(raw, 9)) throw new HeadError('field-value', 'a control in a field value');
    const l = name.toLowerCase();
    names.push(name);
    lower.push(l);
    // The fields llhttp reads keep their trailing whitespace: it takes `5 `, `chunked ` and
    // `keep-alive ` as 5, chunked and keep-alive, but none of them with a tab after.
    values.push(RAW_TAIL.has(l) ? trimStart(raw) : trimOws(raw));
    at = end + 2;
  }
  return { names, lower, values };
}

/** True when every character of `s` is visible ASCII (0x21 to 0x7E). */
function visible(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
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

/** `v` without leading and trailing spaces and tabs. */
export function trimOws(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
  while (b > a && (v.charCodeAt(b - 1) === 32 || v.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === v.length ? v : v.slice(a, b);
}

/** `v` without leading spaces and tabs. */
function trimStart(v: string): string {
  let a = 0;
  while (a < v.length && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
  return a === 0 ? v : v.slice(a);
}

/** `v` without leading spaces and tabs and without trailing spaces (a trailing tab stays). */
function trimStrict(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
  while (b > a && v.charCodeAt(b - 1) === 32) b--;
  return v.slice(a, b);
}

function contentLength(raw: string): number {
  const v = trimStrict(raw);
  if (!DIGITS.test(v)) throw new HeadError('content-length', 'a malformed Content-Length');
  const n = Number(v);
  if (n > Number.MAX_SAFE_INTEGER) {
    throw new HeadError('content-length-size', 'a Content-Length past 2^53 - 1');
  }
  return n;
}

/** The transfer codings of a Transfer-Encoding value. */
interface Codings {
  /** Each coding's name, lowercased. */
  readonly names: string[];
  /** Each coding as it is forwarded: its name lowercased, its parameters as they came. */
  readonly codings: string[];
}

/**
 * The transfer codings of a Transfer-Encoding value; throws when one's
 * name is no token.
 */
function codings(te: string): Codings {
  const names: string[] = [];
  const out: string[] = [];
  for (const part of te.split(',')) {
    const c = trimOws(part);
    if (c === '') continue; // empty list elements are ignored (RFC 9110 §5.6.1)
    const semi = c.indexOf(';');
    const name = trimOws(semi < 0 ? c : c.slice(0, semi));
    if (!TOKEN.test(name)) throw new HeadError('te-not-chunked', 'a malformed transfer coding');
    names.push(name.toLowerCase());
    out.push(semi < 0 ? name.toLowerCase() : `${name.toLowerCase()}${c.slice(semi)}`);
  }
  return { names, codings: out };
}

/**
 * True when chunked is the final coding as llhttp reads it: the last list
 * element is `chunked` (any case) and nothing but spaces follows it, no
 * parameter and no tab (`chunked;x=1` and `chunked\t` are not chunked).
 */
const CHUNKED_LAST = /(?:^|,)[ \t]*chunked *$/i;

/**
 * The framing the fields give (a response's `close` included), and whether
 * the Connection field and the version keep the connection open.
 */
function frame(
  fields: Fields,
  minor: number,
  request: boolean,
): Pick<Head, 'framing' | 'transferEncoding' | 'connection' | 'keepAlive'> {
  let length = -1;
  let te: string | undefined;
  let connection: string[] = [];
  let close = false;
  for (let i = 0; i < fields.lower.length; i++) {
    const name = fields.lower[i];
    const value = fields.values[i] as string;
    if (name === 'content-length') {
      // One Content-Length, one number: llhttp refuses a repeated or listed one, equal or not.
      if (length >= 0)
        throw new HeadError('content-length-repeated', 'more than one Content-Length');
      length = contentLength(value);
    } else if (name === 'transfer-encoding') {
      te = te === undefined ? value : `${te},${value}`;
    } else if (name === 'connection') {
      for (const t of value.split(',')) {
        // A token ends at a space, a comma or the line's end: `keep-alive\t` is not keep-alive
        // to llhttp, so it is not to us either; `close\t` still closes (the safe reading).
        const token = trimStrict(t).toLowerCase();
        if (token !== '') connection.push(token);
        if (trimOws(t).toLowerCase() === 'close') close = true;
      }
    }
  }
  if (connection.length === 0) connection = EMPTY;
  const keepAlive = !close && (minor === 1 || connection.includes('keep-alive'));
  if (te !== undefined) {
    const { names, codings: list } = codings(te);
    if (names.length === 0) throw new HeadError('te-empty', 'a Transfer-Encoding naming no coding');
    if (length >= 0) throw new HeadError('te-and-cl', 'both Transfer-Encoding and Content-Length');
    if (minor === 0) throw new HeadError('te-http10', 'Transfer-Encoding in an HTTP/1.0 message');
    const last = names.length - 1;
    const first = names.indexOf('chunked');
    if (first >= 0 && first < last && (request || names.lastIndexOf('chunked') === last)) {
      throw new HeadError('te-chunked-twice', 'chunked not last, or more than once');
    }
    // chunked with a parameter, or anything but spaces after it, is no chunked to llhttp.
    const chunked = CHUNKED_LAST.test(te);
    if (request && !chunked) {
      throw new HeadError('te-not-chunked', 'a request Transfer-Encoding not ending in chunked');
    }
    if (!chunked && names[last] === 'chunked') {
      // A response llhttp would read until close, a strict reader as chunked: neither is safe.
      throw new HeadError('te-not-chunked', 'chunked with a parameter or bytes after it');
    }
    // A response: Transfer-Encoding overrides Content-Length (RFC 9112 §6.3 step 3).
    return chunked
      ? { framing: CHUNKED, transferEncoding: list.join(', '), connection, keepAlive }
      : { framing: UNTIL_CLOSE, transferEncoding: '', connection, keepAlive };
  }
  if (length >= 0) {
    return { framing: { kind: 'length', length }, transferEncoding: '', connection, keepAlive };
  }
  return { framing: request ? NONE : UNTIL_CLOSE, transferEncoding: '', connection, keepAlive };
}

const EMPTY: string[] = [];
const NONE: Framing = { kind: 'none' };
const CHUNKED: Framing = { kind: 'chunked' };
const UNTIL_CLOSE: Framing = { kind: 'close' };

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
