/**
 * What the parts of one running proxy share, as interfaces both sides
 * import: the proxy's context, what the proxy needs of each client
 * connection (sweeping and shutdown), and what a forwarded request needs
 * of the connection it answers. A connection hands these to its exchanges
 * and tunnels, so neither imports the connection itself.
 *
 * @module
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AccessLog } from './access-log.js';
import type { ProxyAuth } from './auth.js';
import type { Destinations } from './destination.js';
import type { ProxyLimits } from './limits.js';
import type { OutgoingAddress } from './outgoing.js';
import type { Parent, ParentSet } from './parents.js';
import type { SourceList } from './sources.js';
import type { ConnectionPin } from './steering.js';
import type { UpstreamPool } from './upstream.js';

/** A client connection as the proxy tracks it: swept for timeouts, closed on shutdown. */
export interface TrackedConnection {
  /** The client's socket. */
  readonly socket: Socket;
  /** True between requests, with nothing read of the next one. */
  readonly idle: boolean;
  /** Applies the head timeout and the keep-alive timeout; called about once a second. */
  sweep(now: number): void;
}

/** What every connection of one proxy shares. */
export interface ProxyContext {
  /** The instance name, answered by `/healthz`. */
  readonly name: string;
  /** The proxy's resource bounds. */
  readonly limits: ProxyLimits;
  /** The sources that may use the proxy. */
  readonly allowed: SourceList;
  /** The sources that may ask `/healthz` and nothing else. */
  readonly healthOnly: SourceList;
  /** Where requests may go: the destination policy. */
  readonly destinations: Destinations;
  /** Proxy authentication, when the proxy requires it. */
  readonly auth: ProxyAuth | undefined;
  /** The admin credential of the ban endpoint, when there is one. */
  readonly admin: ProxyAuth | undefined;
  /** The access log, when there is one. */
  readonly log: AccessLog | undefined;
  /** Picks the source address of a connection to an origin. */
  readonly outgoing: OutgoingAddress;
  /** The connections to origins (or to the parents). */
  readonly pool: UpstreamPool;
  /** The parent proxies everything goes through, when the proxy has them. */
  readonly parents: ParentSet | undefined;
  /** The client connections open now. */
  readonly conns: Set<TrackedConnection>;
  /** Whether a connection whose first byte is 5 speaks SOCKS5 (else it is read as HTTP). */
  readonly socks5: boolean;
  /** The client sockets of the tunnels open now. */
  readonly tunnels: Set<Duplex>;
  /** True once shutdown has begun. */
  closing: boolean;
}

/** The client connection a forwarded request answers, as the request sees it. */
export interface ExchangeClient {
  /** The proxy the connection belongs to. */
  readonly ctx: ProxyContext;
  /** The client's address, for the access log. */
  readonly address: string;
  /** The client's socket: what is written to it may wait there (see `Upstream.lend`). */
  readonly socket: Socket;
  /** The parent the connection's last request went to, for rotation. */
  readonly pin: ConnectionPin<Parent>;
  /** Writes to the client; false when its buffer is full (wait for `drain`). */
  write(data: Buffer | string): boolean;
  /** Holds writes back until {@link uncork}, to send them together. */
  cork(): void;
  /** Sends what was written since {@link cork}. */
  uncork(): void;
  /** Cuts the connection. */
  destroy(): void;
  /** Reads again after the request could not take more of its body. */
  resumeInput(): void;
  /**
   * Answers with an error of the proxy's own, logs it, and closes the
   * connection; `fields` are header lines to add (each ending in CRLF).
   */
  answer(
    status: number,
    text: string,
    method: string,
    target: string,
    started: number,
    bytesIn: number,
    fields?: string,
  ): void;
  /** The request is over; the connection serves the next one or closes. */
  exchangeDone(keepAlive: boolean): void;
}
