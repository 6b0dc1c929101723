/**
 * The request targets a forward proxy reads: the absolute-form URI of a
 * proxied request (RFC 9112 §3.2.2), taken apart into what is connected
 * to, what is sent and what is logged, and the authority-form of CONNECT
 * (§3.2.3).
 *
 * @module
 */
import { isIP } from 'node:net';

const DIGITS = /^\d+$/;

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
/** userinfo = *( unreserved / pct-encoded / sub-delims / ":" ), RFC 3986 §3.2.1. */
const USERINFO = /^(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*$/;

/** Parses the absolute-form target of a proxy request (`http://host[:port]/path?query`). */
export function parseHttpTarget(target: string): HttpTarget | TargetProblem {
  const scheme = SCHEME.exec(target);
  if (scheme === null) return 'not-a-url';
  if ((scheme[1] as string).toLowerCase() !== 'http') return 'not-http';
  if (!target.startsWith('//', 5)) return 'not-a-url';
  let end = 7;
  while (end < target.length) {
    const c = target.charCodeAt(end);
    if (c === 47 || c === 63) break; // '/', '?'
    // A fragment right after the authority is no URI llhttp reads; none is forwarded anyway.
    if (c === 35) return 'not-a-url';
    end++;
  }
  let authority = target.slice(7, end);
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    // Userinfo is never forwarded, and must be one (RFC 3986 §3.2.1, the characters llhttp takes
    // there too): else the host it seems to hide is no host at all.
    if (!USERINFO.test(authority.slice(0, at))) return 'not-a-url';
    authority = authority.slice(at + 1);
  }
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
