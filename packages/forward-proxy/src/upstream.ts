/**
 * Connections from the proxy to origins, kept open between requests: one
 * pool per origin (`host:port`), bounded in open and idle connections, with
 * idle ones closed after a while. As Squid does, a kept-open connection is
 * only handed to a request that could be sent again on a fresh one (no body,
 * an idempotent method): a connection the origin closes just as the request
 * leaves must not lose a POST.
 *
 * @module
 */
import type { LookupFunction, Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { now as clock } from './clock.js';
import type { Destinations } from './destination.js';
import { connectFrom, type OutgoingAddress } from './outgoing.js';
import { ReadBuffer } from './read-buffers.js';

/** What a connection tells the request that holds it. */
export interface UpstreamOwner {
  /**
   * Bytes from the origin. `chunk` is the connection's read buffer, good
   * for this call only: what is kept must be copied, and what was written
   * on must be reported with {@link Upstream.lend}.
   */
  onUpstreamData(chunk: Buffer): void;
  /** The origin finished sending (FIN). */
  onUpstreamEnd(): void;
  /** The connection is gone; `timedOut` when a connect or idle timeout cut it. */
  onUpstreamClose(error: Error | undefined, timedOut: boolean): void;
  onUpstreamDrain(): void;
}

/** A request waiting for a connection. */
export interface UpstreamWaiter {
  /** True when a kept-open connection may carry the request. */
  readonly reuse: boolean;
  /** Gets the connection (new ones may still be connecting: writes are queued). */
  onUpstream(u: Upstream): void;
}

/** Bounds of a {@link UpstreamPool}. */
export interface UpstreamLimits {
  readonly maxOriginConnections: number;
  readonly maxIdleOriginConnections: number;
  readonly originIdleMs: number;
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
}

/** One connection to an origin. */
export class Upstream {
  readonly socket: Socket;
  readonly origin: Origin;
  owner: UpstreamOwner | undefined;
  /** True once it has carried a request before the current one. */
  reused = false;
  /** True once the TCP connection was made. */
  connected = false;
  /**
   * The session it was made for, when the source address goes by the
   * session: it then carries that session's requests only.
   */
  readonly session: string | undefined;
  idleSince = 0;
  #error: Error | undefined;
  #timedOut = false;
  readonly #reads = new ReadBuffer();

  constructor(
    origin: Origin,
    host: string,
    port: number,
    limits: UpstreamLimits,
    outgoing: OutgoingAddress,
    session: string | undefined,
    lookup: LookupFunction | undefined,
  ) {
    this.origin = origin;
    this.session = session;
    const socket = connectFrom(outgoing, session, {
      host,
      port,
      noDelay: true,
      ...(lookup === undefined ? {} : { lookup }),
      onread: { buffer: this.#reads.next, callback: this.#onRead },
    });
    this.socket = socket;
    socket.setTimeout(limits.connectTimeoutMs);
    socket.once('connect', () => {
      this.connected = true;
      socket.setTimeout(limits.idleTimeoutMs);
    });
    socket.on('end', () => {
      if (this.owner !== undefined) this.owner.onUpstreamEnd();
      else socket.destroy();
    });
    socket.on('drain', () => this.owner?.onUpstreamDrain());
    socket.on('timeout', () => {
      this.#timedOut = true;
      socket.destroy();
    });
    socket.on('error', (err: Error) => {
      this.#error = err;
    });
    socket.on('close', () => {
      this.#reads.release();
      origin.pool.closed(this);
      const owner = this.owner;
      this.owner = undefined;
      owner?.onUpstreamClose(this.#error, this.#timedOut);
    });
  }

  /**
   * The bytes of the last read were written to `to` and may still be
   * queued there: the read buffer is not reused until `to` has sent them.
   */
  lend(to: Writable): void {
    this.#reads.lend(to);
  }

  readonly #onRead = (n: number, buf: Uint8Array): boolean => {
    this.#reads.got(n);
    const chunk = (buf as Buffer).subarray(0, n);
    if (this.owner !== undefined) this.owner.onUpstreamData(chunk);
    else this.socket.destroy(); // an idle connection has nothing to say
    return true;
  };
}

/** The connections to one origin. */
interface Origin {
  readonly key: string;
  readonly host: string;
  readonly port: number;
  readonly pool: UpstreamPool;
  /** Idle connections, the most recently used last. */
  readonly idle: Upstream[];
  /** Requests waiting for a connection, each with the session its connection is for. */
  readonly waiting: Waiting[];
  open: number;
}

/** A request waiting for a connection, and the session its connection is for. */
interface Waiting {
  readonly w: UpstreamWaiter;
  readonly session: string | undefined;
}

/** The proxy's connections to origins. */
export class UpstreamPool {
  readonly #origins = new Map<string, Origin>();
  readonly #limits: UpstreamLimits;
  readonly #outgoing: OutgoingAddress;
  readonly #destinations: Destinations | undefined;
  #closing = false;

  /**
   * `outgoing` picks the source address of each connection (see
   * `outgoing.ts`); `destinations`, when given, resolves and checks each
   * name dialled (a gateway's pool, whose connections go to its parents,
   * has none).
   */
  constructor(
    limits: UpstreamLimits,
    outgoing: OutgoingAddress = () => undefined,
    destinations?: Destinations,
  ) {
    this.#limits = limits;
    this.#outgoing = outgoing;
    this.#destinations = destinations;
  }

  /** Connections open now, idle ones included. */
  get size(): number {
    let n = 0;
    for (const o of this.#origins.values()) n += o.open;
    return n;
  }

  /** Idle connections now. */
  get idle(): number {
    let n = 0;
    for (const o of this.#origins.values()) n += o.idle.length;
    return n;
  }

  /**
   * Gives `w` a connection to `host:port` for `session` (the request's
   * session id, when it has one): an idle one when it may reuse one, else a
   * new one; when the origin has its maximum open, `w` waits. When the
   * source address goes by the session, only a connection made for the
   * same session (or, without one, made without one) is reused.
   */
  acquire(host: string, port: number, w: UpstreamWaiter, session?: string): void {
    const key = `${host}:${port}`;
    let o = this.#origins.get(key);
    if (o === undefined) {
      o = { key, host, port, pool: this, idle: [], waiting: [], open: 0 };
      this.#origins.set(key, o);
    }
    const tag = this.#outgoing.bySession === true ? session : undefined;
    if (w.reuse) {
      for (let i = o.idle.length - 1; i >= 0; i--) {
        const u = o.idle[i] as Upstream;
        if (!u.socket.destroyed && u.session !== tag) continue;
        o.idle.splice(i, 1);
        if (u.socket.destroyed) continue;
        u.reused = true;
        w.onUpstream(u);
        return;
      }
    }
    if (o.open >= this.#limits.maxOriginConnections) {
      // Wait; an idle connection this request may not use is closed to make room.
      o.waiting.push({ w, session: tag });
      o.idle.shift()?.socket.destroy();
      return;
    }
    this.#open(o, w, tag);
  }

  /** Forgets a waiter that no longer needs a connection. */
  cancel(host: string, port: number, w: UpstreamWaiter): void {
    const o = this.#origins.get(`${host}:${port}`);
    const i = o?.waiting.findIndex((x) => x.w === w) ?? -1;
    if (i >= 0) o?.waiting.splice(i, 1);
  }

  /**
   * Takes a connection back from the request that held it: kept for the
   * next request when `reusable`, closed otherwise.
   */
  release(u: Upstream, reusable: boolean): void {
    u.owner = undefined;
    const o = u.origin;
    if (!reusable || this.#closing || u.socket.destroyed) {
      u.socket.destroy();
      return;
    }
    const next = o.waiting[0];
    if (next?.w.reuse && next.session === u.session) {
      o.waiting.shift();
      u.reused = true;
      next.w.onUpstream(u);
      return;
    }
    if (next !== undefined || o.idle.length >= this.#limits.maxIdleOriginConnections) {
      // A waiter that needs a fresh connection (or one for another session) gets one when this
      // one has closed.
      u.socket.destroy();
      return;
    }
    u.idleSince = clock();
    o.idle.push(u);
  }

  /** Closes idle connections older than the limit. */
  sweep(now: number): void {
    for (const o of this.#origins.values()) {
      while (
        o.idle.length > 0 &&
        now - (o.idle[0] as Upstream).idleSince > this.#limits.originIdleMs
      ) {
        const u = o.idle.shift() as Upstream;
        u.socket.destroy();
      }
    }
  }

  /** Closes every connection and refuses to keep any from now on. */
  close(): void {
    this.#closing = true;
    for (const o of this.#origins.values()) {
      o.waiting.length = 0;
      for (const u of o.idle.splice(0)) u.socket.destroy();
    }
  }

  /** Called by a connection once its socket has closed. */
  closed(u: Upstream): void {
    const o = u.origin;
    const i = o.idle.indexOf(u);
    if (i >= 0) o.idle.splice(i, 1);
    o.open--;
    // A slot is free: the first waiter gets a new connection.
    while (!this.#closing && o.waiting.length > 0 && o.open < this.#limits.maxOriginConnections) {
      const next = o.waiting.shift() as Waiting;
      this.#open(o, next.w, next.session);
    }
    if (o.open === 0 && o.waiting.length === 0) this.#origins.delete(o.key);
  }

  #open(o: Origin, w: UpstreamWaiter, session: string | undefined): void {
    o.open++;
    const lookup = this.#destinations?.lookupFor(o.port, 'http');
    const u = new Upstream(o, o.host, o.port, this.#limits, this.#outgoing, session, lookup);
    w.onUpstream(u);
  }
}
