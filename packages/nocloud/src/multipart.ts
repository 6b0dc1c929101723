import { type Content, concat, describe, indexOf, isUtf8, toBytes, utf8 } from './bytes.js';

/** One part of a {@link buildMultipart} message. */
export interface MultipartPart {
  /** The part's content; a string is written as UTF-8. */
  readonly content: Content;
  /**
   * The part's `Content-Type`. Defaults to {@link detectContentType} of the
   * content. Ignored for a part that is itself a MIME message, which keeps
   * its own headers.
   */
  readonly contentType?: string;
  /**
   * A file name for the part's `Content-Disposition`. cloud-init names a
   * shell script it runs after it; without one it numbers the parts
   * (`part-001`, ...).
   */
  readonly filename?: string;
}

/** The boundary {@link buildMultipart} tries first. */
export const MULTIPART_BOUNDARY = 'proxy-op-nocloud-part';

// What cloud-init recognises at the start of a part, longest first, as its
// own handler table does.
const PREFIXES: readonly (readonly [string, string])[] = [
  ['#cloud-config-archive', 'text/cloud-config-archive'],
  ['#cloud-config-jsonp', 'text/cloud-config-jsonp'],
  ['## template: jinja', 'text/jinja2'],
  ['#cloud-boothook', 'text/cloud-boothook'],
  ['#include-once', 'text/x-include-once-url'],
  ['#part-handler', 'text/part-handler'],
  ['#cloud-config', 'text/cloud-config'],
  ['#include', 'text/x-include-url'],
  ['#!', 'text/x-shellscript'],
];

const FILENAME_RE = /^[A-Za-z0-9._-]{1,64}$/;
const CONTENT_TYPE_RE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

/**
 * The `Content-Type` cloud-init gives content by its first bytes, after
 * leading white space and ignoring case: `#!` is `text/x-shellscript`,
 * `#cloud-config` is `text/cloud-config`, and so on through cloud-init's
 * table (`#include`, `#cloud-boothook`, `## template: jinja`, ...). Gzip
 * data is `application/gzip` (cloud-init unpacks it and looks again).
 * Anything else is `text/plain` when it is UTF-8, else
 * `application/octet-stream`.
 */
export function detectContentType(content: Content): string {
  const bytes = toBytes(content, 'detectContentType: content');
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'application/gzip';
  let start = 0;
  while (start < bytes.length && isSpace(bytes[start] as number)) start++;
  for (const [prefix, type] of PREFIXES) {
    if (startsWithIgnoringCase(bytes, start, prefix)) return type;
  }
  return isUtf8(bytes) ? 'text/plain' : 'application/octet-stream';
}

/**
 * True when `content` is a MIME message by cloud-init's own test: a
 * `MIME-Version:` header (any case) within its first 4096 bytes.
 */
export function isMimeMessage(content: Content): boolean {
  const bytes = toBytes(content, 'isMimeMessage: content');
  const head = bytes.subarray(0, 4096);
  const needle = 'mime-version:';
  outer: for (let i = 0; i + needle.length <= head.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (lower(head[i + j] as number) !== needle.charCodeAt(j)) continue outer;
    }
    return true;
  }
  return false;
}

/**
 * Joins parts into one `multipart/mixed` MIME message, the form cloud-init
 * reads when user-data or vendor-data carries more than one part.
 *
 * - Each part's bytes come back unchanged from a MIME parser: ASCII text
 *   (printable characters, tabs and line ends) is written as it is
 *   (`7bit`), anything else as `base64`.
 * - A part that is itself a MIME message (see {@link isMimeMessage}) is
 *   nested as it is, so its own parts are read too.
 * - Lines end in CRLF. The boundary is {@link MULTIPART_BOUNDARY}, with a
 *   number added until `--boundary` occurs in no part, so it can never be
 *   mistaken for content. The output depends only on the parts.
 *
 * Throws TypeError for a part that is not an object, a content that is not
 * bytes or a string, a `contentType` that is not `type/subtype`, or a
 * `filename` outside 1 to 64 of `A-Z a-z 0-9 . _ -`.
 */
export function buildMultipart(parts: readonly MultipartPart[]): Uint8Array {
  if (!Array.isArray(parts)) {
    throw new TypeError(`buildMultipart: parts must be an array, got ${describe(parts)}`);
  }
  const bodies = parts.map((part: MultipartPart, i) => partBody(part, i));
  let boundary = MULTIPART_BOUNDARY;
  for (let n = 1; bodies.some((b) => indexOf(b, utf8(`--${boundary}`)) !== -1); n++) {
    boundary = `${MULTIPART_BOUNDARY}-${n}`;
  }
  const chunks: Uint8Array[] = [
    utf8(`Content-Type: multipart/mixed; boundary="${boundary}"\r\nMIME-Version: 1.0\r\n`),
  ];
  for (const body of bodies) {
    // The CRLF before each delimiter belongs to the delimiter, not the part.
    chunks.push(utf8(`\r\n--${boundary}\r\n`), body);
  }
  chunks.push(utf8(`\r\n--${boundary}--\r\n`));
  return concat(chunks);
}

function partBody(part: MultipartPart, i: number): Uint8Array {
  const where = `buildMultipart: parts[${i}]`;
  if (typeof part !== 'object' || part === null) {
    throw new TypeError(`${where} must be an object, got ${describe(part)}`);
  }
  const content = toBytes(part.content, `${where}.content`);
  const { contentType, filename } = part;
  if (
    contentType !== undefined &&
    !(typeof contentType === 'string' && CONTENT_TYPE_RE.test(contentType))
  ) {
    throw new TypeError(
      `${where}.contentType must be a type/subtype string, got ${JSON.stringify(contentType)}`,
    );
  }
  if (filename !== undefined && !(typeof filename === 'string' && FILENAME_RE.test(filename))) {
    throw new TypeError(
      `${where}.filename must be 1 to 64 of A-Z a-z 0-9 . _ -, got ${JSON.stringify(filename)}`,
    );
  }
  if (isMimeMessage(content) && isUtf8(content)) return content;

  const type = contentType ?? detectContentType(content);
  const charset = type.startsWith('text/') && isUtf8(content) ? '; charset="utf-8"' : '';
  const headers = [`Content-Type: ${type}${charset}`, 'MIME-Version: 1.0'];
  let body: Uint8Array;
  if (isPlainAscii(content)) {
    headers.push('Content-Transfer-Encoding: 7bit');
    body = content;
  } else {
    // Python's email package (which cloud-init uses) turns 8bit text into
    // escapes when it decodes a part, so anything but plain ASCII text goes
    // as base64.
    headers.push('Content-Transfer-Encoding: base64');
    body = utf8(base64Lines(content));
  }
  if (filename !== undefined) {
    headers.push(`Content-Disposition: attachment; filename="${filename}"`);
  }
  return concat([utf8(`${headers.join('\r\n')}\r\n\r\n`), body]);
}

function base64Lines(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return lines.join('\r\n');
}

/** Printable ASCII, tabs and line ends only. */
function isPlainAscii(bytes: Uint8Array): boolean {
  for (const b of bytes) {
    if (b >= 0x7f || (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) return false;
  }
  return true;
}

function isSpace(b: number): boolean {
  return b === 0x20 || (b >= 0x09 && b <= 0x0d) || (b >= 0x1c && b <= 0x1f);
}

function lower(b: number): number {
  return b >= 0x41 && b <= 0x5a ? b + 0x20 : b;
}

function startsWithIgnoringCase(bytes: Uint8Array, at: number, prefix: string): boolean {
  if (bytes.length - at < prefix.length) return false;
  for (let j = 0; j < prefix.length; j++) {
    if (lower(bytes[at + j] as number) !== prefix.charCodeAt(j)) return false;
  }
  return true;
}
