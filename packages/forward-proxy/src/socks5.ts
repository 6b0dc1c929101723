/**
 * SOCKS5 on the proxy's own port (RFC 1928), told from HTTP by the first
 * byte (5): the method negotiation, user name and password (RFC 1929)
 * checked against the same password file as `Proxy-Authorization`, and
 * `CONNECT` to an IPv4 or IPv6 address or a domain name, carried by the
 * same tunnel as HTTP `CONNECT`: the same destination policy (its
 * `CONNECT` ports), the same parents, the same access-log line. `BIND`
 * and `UDP ASSOCIATE` are refused as commands not supported; GSSAPI is
 * never chosen.
 *
 * @module
 */
import { isIPv6, type Socket } from 'node:net';
import { formatIp } from '@proxy-op/egress';
import type { AuthOutcome } from './auth.js';
import { now as clock } from './clock.js';
import type { ProxyContext, TrackedConnection } from './context.js';
import { sourceKey } from './sources.js';
import { openTunnel, type TunnelReplies } from './tunnel.js';
import type { UserParams } from './user-params.js';

/** The protocol's version byte, the first byte a SOCKS5 client sends. */
export const SOCKS5 = 0x05;

/** Method codes (RFC 1928 §3). */
const NO_AUTH = 0x00;
const USER_PASSWORD = 0x02;
const NO_ACCEPTABLE = 0xff;

/** Reply codes (RFC 1928 §6). */
export const Reply = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

/** A reply with the bound address left unsaid (0.0.0.0:0), as most servers send it. */
function reply(code: number): Buffer {
  return Buffer.from([SOCKS5, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

/** The SOCKS5 reply for a tunnel the proxy refused with an HTTP status (and the socket error behind it). */
export function replyFor(status: number, cause?: string): number {
  if (status === 403) return Reply.notAllowed;
  if (status === 504) return Reply.hostUnreachable;
  switch (cause) {
    case 'ECONNREFUSED':
      return Reply.connectionRefused;
    case 'ENETUNREACH':
      return Reply.networkUnreachable;
    case 'EHOSTUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return Reply.hostUnreachable;
    default:
      return Reply.generalFailure;
  }
}

/** How a tunnel answers a SOCKS5 client: reply codes in place of HTTP answers. */
const SOCKS5_REPLIES: TunnelReplies = {
  refusal: (status, cause) => reply(replyFor(status, cause)),
  opened: () => reply(Reply.succeeded),
};

const GREETING = 0;
const AUTH = 1;
const REQUEST = 2;
const VERIFYING = 3;
const OPEN = 4;

/**
 * One SOCKS5 client connection, from its first byte to its tunnel.
 * `allowed`: the source may use the proxy (a source allowed `/healthz`
 * only is offered no method).
 */
export class Socks5Conn implements TrackedConnection {
  readonly socket: Socket;
  readonly #ctx: ProxyContext;
  readonly #allowed: boolean;
  readonly #address: string;
  readonly #since = clock();
  #state = GREETING;
  #buf: Buffer;
  #user: string | undefined;
  /** The parameters of the user name it authenticated with. */
  #params: UserParams | undefined;

  constructor(ctx: ProxyContext, socket: Socket, allowed: boolean, first: Buffer) {
    this.#ctx = ctx;
    this.socket = socket;
    this.#allowed = allowed;
    this.#address = socket.remoteAddress ?? '';
    this.#buf = first;
    ctx.conns.add(this);
    socket.on('data', this.#onData);
    socket.on('error', () => {});
    socket.once('close', () => ctx.conns.delete(this));
    this.#pump();
  }

  /** Never idle: a handshake under way is cut by its own timeout, a tunnel by its own. */
  get idle(): boolean {
    return false;
  }

  /** Cuts a handshake that took longer than the head timeout. */
  sweep(now: number): void {
    if (this.#state !== OPEN && now - this.#since > this.#ctx.limits.headersTimeoutMs) {
      this.socket.destroy();
    }
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    this.#pump();
  };

  /** Ends the handshake with `bytes`, and the connection with it. */
  #fail(bytes: Buffer): void {
    this.#state = OPEN; // nothing more is read
    this.socket.off('data', this.#onData);
    this.socket.end(bytes);
    setTimeout(() => this.socket.destroy(), 1_000).unref();
  }

  #pump(): void {
    for (;;) {
      const before = this.#state;
      if (this.#state === GREETING) this.#greeting();
      else if (this.#state === AUTH) this.#auth();
      else if (this.#state === REQUEST) this.#request();
      if (this.#state === before) return;
    }
  }

  /** VER, NMETHODS, METHODS: chooses user and password when the proxy needs it, none otherwise. */
  #greeting(): void {
    const b = this.#buf;
    if (b.length < 2) return;
    const n = b[1] as number;
    if (b.length < 2 + n) return;
    const methods = b.subarray(2, 2 + n);
    this.#buf = b.subarray(2 + n);
    const needs = this.#ctx.auth !== undefined;
    let method = NO_ACCEPTABLE;
    if (this.#allowed && n > 0) {
      if (methods.includes(USER_PASSWORD)) method = USER_PASSWORD;
      if (!needs && methods.includes(NO_AUTH)) method = NO_AUTH;
    }
    if (method === NO_ACCEPTABLE) {
      this.#fail(Buffer.from([SOCKS5, NO_ACCEPTABLE]));
      return;
    }
    this.socket.write(Buffer.from([SOCKS5, method]));
    this.#state = method === USER_PASSWORD ? AUTH : REQUEST;
  }

  /** RFC 1929: VER 1, ULEN, UNAME, PLEN, PASSWD, checked as a Basic credential would be. */
  #auth(): void {
    const b = this.#buf;
    if (b.length < 2) return;
    const ulen = b[1] as number;
    if (b.length < 3 + ulen) return;
    const plen = b[2 + ulen] as number;
    if (b.length < 3 + ulen + plen) return;
    const user = b.subarray(2, 2 + ulen);
    const password = b.subarray(3 + ulen, 3 + ulen + plen);
    this.#buf = b.subarray(3 + ulen + plen);
    const auth = this.#ctx.auth;
    if (b[0] !== 0x01 || ulen === 0 || plen === 0 || user.includes(0x3a)) {
      this.#fail(Buffer.from([0x01, 0x01]));
      return;
    }
    if (auth === undefined) {
      // Not needed: any name is taken, none is checked.
      this.socket.write(Buffer.from([0x01, 0x00]));
      this.#state = REQUEST;
      return;
    }
    const value = `Basic ${Buffer.concat([user, Buffer.from(':'), password]).toString('base64')}`;
    const decide = (o: AuthOutcome) => {
      if (this.socket.destroyed) return;
      if (o.kind !== 'user') {
        this.#fail(Buffer.from([0x01, 0x01]));
        return;
      }
      this.#user = o.user;
      this.#params = o.params;
      this.socket.write(Buffer.from([0x01, 0x00]));
      this.#state = REQUEST;
      this.#pump();
    };
    const outcome = auth.check(value, sourceKey(this.#address));
    if (outcome instanceof Promise) {
      this.#state = VERIFYING;
      void outcome.then(decide);
    } else decide(outcome);
  }

  /** VER, CMD, RSV, ATYP, DST.ADDR, DST.PORT: a CONNECT becomes a tunnel. */
  #request(): void {
    const b = this.#buf;
    if (b.length < 5) return;
    const atyp = b[3] as number;
    const addrLen =
      atyp === 0x01 ? 4 : atyp === 0x04 ? 16 : atyp === 0x03 ? 1 + (b[4] as number) : -1;
    if (b[0] !== SOCKS5 || addrLen < 0) {
      this.#fail(reply(b[0] !== SOCKS5 ? Reply.generalFailure : Reply.addressTypeNotSupported));
      return;
    }
    if (b.length < 4 + addrLen + 2) return;
    if (b[1] !== 0x01) {
      this.#fail(reply(Reply.commandNotSupported));
      return;
    }
    const at = b.subarray(4, 4 + addrLen);
    const port = b.readUInt16BE(4 + addrLen);
    const rest = b.subarray(4 + addrLen + 2);
    let host: string;
    if (atyp === 0x01) host = [...at].join('.');
    else if (atyp === 0x04) {
      const words = [0, 4, 8, 12].map((i) => at.readUInt32BE(i));
      host = formatIp({ family: 6, words: words as [number, number, number, number] });
    } else host = at.subarray(1).toString('latin1');
    if (atyp === 0x03 && (host.length === 0 || !/^[A-Za-z0-9._-]+$/.test(host))) {
      this.#fail(reply(Reply.hostUnreachable));
      return;
    }
    this.#state = OPEN;
    this.#buf = Buffer.alloc(0);
    this.socket.off('data', this.#onData);
    openTunnel(
      this.#ctx,
      this.socket,
      isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`,
      rest,
      {
        allowed: this.#allowed,
        source: this.#address,
        user: this.#user,
        started: this.#since,
        params: this.#params,
        session: this.#ctx.parents?.sessionOf(this.#address, [], []),
        replies: SOCKS5_REPLIES,
      },
    );
  }
}
