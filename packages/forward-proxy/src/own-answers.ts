/**
 * The answers a proxy makes itself, as bytes: a refusal or error that ends
 * the connection, a `200` of its own (health, metrics), and the bare status
 * for a request it could not read. None has a body for `HEAD` (RFC 9110
 * §9.3.2: one would be read as the next answer).
 *
 * @module
 */
import { httpDate } from './http-date.js';
import { REASONS } from './reasons.js';

/** An answer of the proxy's own that ends the connection; `fields` end in CRLF each. */
export function closingAnswer(
  status: number,
  text: string,
  method: string,
  fields: string,
): string {
  return (
    `HTTP/1.1 ${status} ${REASONS[status] ?? ''}\r\nContent-Type: text/plain\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\nDate: ${httpDate()}\r\n${fields}` +
    `Connection: close\r\n\r\n${method === 'HEAD' ? '' : text}`
  );
}

/** A `200` of the proxy's own, of `type`; `close` ends the connection after it. */
export function okAnswer(
  type: string,
  text: string,
  fields: string,
  method: string,
  close: boolean,
): string {
  return (
    `HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
    `${fields}Date: ${httpDate()}\r\n${close ? 'Connection: close\r\n' : ''}\r\n` +
    `${method === 'HEAD' ? '' : text}`
  );
}

/** The answer to a request that could not be read: its status alone. */
export function bareAnswer(status: number): string {
  return `HTTP/1.1 ${status} ${REASONS[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`;
}
