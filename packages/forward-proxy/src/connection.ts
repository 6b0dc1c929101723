/**
 * One client connection to the proxy: request heads read from the bytes
 * (bounded in size and time), answered in order one at a time (pipelined
 * requests wait their turn, held back by backpressure), and each handed to
 * the health check, a refusal, an HTTP forward or a CONNECT tunnel. A
 * forward or a tunnel needs an allowed source (403), then, when the proxy
 * requires it, a user the password file holds (407).
 *
 * @module
 */
import type { Socket } from 'node:net';
import { logEnded } from './access-log.js';
import type { AuthOutcome } from './auth.js';
import { banEndpoint } from './ban-endpoint.js';
import { now as clock } from './clock.js';
import type { ExchangeClient, ProxyContext, TrackedConnection } from './context.js';
import { Exchange } from './exchange.js';
import { HeadError, parseRequestHead, type RequestHead } from './http1.js';
import { bareAnswer, closingAnswer, okAnswer } from './own-answers.js';
import { metricsText } from './parent-metrics.js';
import type { Parent } from './parents.js';
import { HeadReader } from './reader.js';
import { routeRequest } from './route.js';
import { SOCKS5, Socks5Conn } from './socks5.js';
import { sourceKey } from './sources.js';
import type { ConnectionPin } from './steering.js';
import { openTunnel } from './tunnel.js';
import type { UserParams } from './user-params.js';

/** How long a kept-open client connection may wait for its next request, in ms. */
export const KEEP_ALIVE_MS = 5_000;

const HEAD = 0;
const BUSY = 1;
const TUNNEL = 2;
const DONE = 3;
/** Waiting (a credential verified, a ban recorded): nothing more is read meanwhile. */
const AUTH = 4;

const EMPTY = Buffer.alloc(0);
const ORIGIN_FORM = 'a proxy request needs an absolute URI (http://host/path)\n';
const NOT_ALLOWED = 'this source may not use the proxy\n';
const METRICS = 'text/plain; version=0.0.4';

/** A client connection. */
export class ClientConn implements ExchangeClient, TrackedConnection {
  readonly ctx: ProxyContext;
  readonly socket: Socket;
  readonly address: string;
  /** The parent this connection's last request went to, for rotation. */
  readonly pin: ConnectionPin<Parent> = { parent: undefined };
  /** The source may use the proxy (false: it may ask `/healthz` only). */
  readonly #allowed: boolean;
  #mode = HEAD;
  /** Bytes read and not yet used. */
  #buf: Buffer | undefined;
  readonly #heads: HeadReader;
  #exchange: Exchange | undefined;
  #served = 0;
  /** When the head being read (or awaited on a new connection) began. */
  #headSince: number;
  /** When the connection last became idle between requests. */
  #idleSince = 0;
  #ended = false;
  #paused = false;
  /** When request body bytes last came, or the proxy last asked for more. */
  #bodySince = 0;
  /** Answers written and not yet handed to the kernel (the client is not reading them). */
  #held = 0;
  /** The next request waits until the client has taken what is held. */
  #holding = false;

  /** `allowed`: the source may use the proxy; false, it may ask `/healthz` only. */
  constructor(ctx: ProxyContext, socket: Socket, allowed: boolean) {
    this.ctx = ctx;
    this.socket = socket;
    this.#allowed = allowed;
    this.address = socket.remoteAddress ?? '';
    this.#headSince = clock();
    this.#heads = new HeadReader(ctx.limits.maxHeaderBytes);
    ctx.conns.add(this);
    socket.setTimeout(ctx.limits.idleTimeoutMs, () => socket.destroy());
    socket.on('data', this.#onData);
    socket.on('end', () => this.#onEnd());
    socket.on('drain', () => {
      this.#exchange?.onClientDrain();
      if (this.#holding) this.#release();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.#mode = DONE;
      ctx.conns.delete(this);
      const ex = this.#exchange;
      this.#exchange = undefined;
      ex?.clientGone();
    });
  }

  /** True between requests, with nothing read of the next one. */
  get idle(): boolean {
    return this.#mode === HEAD && this.#buf === undefined && !this.#holding;
  }

  /**
   * Applies the head timeout, the request body's idle timeout and the
   * keep-alive timeout; called about once a second.
   */
  sweep(now: number): void {
    if (this.#mode === BUSY) {
      const ex = this.#exchange;
      // Only while the proxy waits for the client: backpressure from the origin is no idling.
      if (ex?.wantsBody && ex.canTakeBody && !this.#paused) {
        if (now - this.#bodySince > this.ctx.limits.bodyIdleTimeoutMs) ex.bodyTimedOut();
      }
      return;
    }
    if (this.#mode !== HEAD || this.#holding) return;
    if (this.#buf !== undefined || this.#served === 0) {
      if (now - this.#headSince > this.ctx.limits.headersTimeoutMs) this.#reject(408);
    } else if (now - this.#idleSince > KEEP_ALIVE_MS) {
      this.socket.destroy();
    }
  }

  /** Writes to the client (a string as latin1); false when its buffer is full. */
  write(data: Buffer | string): boolean {
    return typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
  }

  /** Holds writes back until {@link uncork}. */
  cork(): void {
    this.socket.cork();
  }

  /** Sends what was written since {@link cork}. */
  uncork(): void {
    this.socket.uncork();
  }

  /** Cuts the connection; nothing more is read or answered. */
  destroy(): void {
    this.#mode = DONE;
    this.socket.destroy();
  }

  /** Reads again after the current exchange could not take more input. */
  resumeInput(): void {
    this.#bodySince = clock();
    if (this.#paused) {
      this.#paused = false;
      this.socket.resume();
    }
    this.#pump();
  }

  readonly #onData = (chunk: Buffer): void => {
    if (this.#mode === DONE) return;
    if (this.#served === 0 && this.#buf === undefined && chunk[0] === SOCKS5 && this.ctx.socks5) {
      // A SOCKS5 client: the connection is its from the first byte on.
      this.#mode = DONE;
      this.socket.off('data', this.#onData);
      this.ctx.conns.delete(this);
      new Socks5Conn(this.ctx, this.socket, this.#allowed, chunk);
      return;
    }
    if (this.#buf === undefined) {
      this.#buf = chunk;
      if (this.#mode === HEAD && this.#served > 0 && !this.#holding) {
        this.#headSince = clock();
      }
    } else {
      this.#buf = Buffer.concat([this.#buf, chunk]);
    }
    if (this.#mode === BUSY) this.#bodySince = clock();
    this.#pump();
  };

  #onEnd(): void {
    this.#ended = true;
    if (this.#mode === HEAD) {
      // Requests held for a client that reads slowly are still answered once it has read.
      if (this.#holding && this.#buf !== undefined) return;
      // A half-sent head is dropped; a connection between requests is closed.
      if (this.#buf === undefined) this.socket.end();
      else this.destroy();
    } else if (this.#mode === BUSY && this.#exchange?.wantsBody && this.#buf === undefined) {
      this.destroy(); // the request body was cut short
    }
    // Bytes still held (the origin could not take them yet) are passed on first: Node emits
    // 'end' after the last 'data' even when that chunk paused the socket. #pump judges then.
  }

  #pause(): void {
    if (!this.#paused) {
      this.#paused = true;
      this.socket.pause();
    }
  }

  /** Uses the bytes read as far as the current state allows. */
  #pump(): void {
    for (;;) {
      const buf = this.#buf;
      if (buf === undefined) return;
      if (this.#mode === HEAD) {
        if (this.#holding) {
          this.#pause(); // the client has not read the answers so far: the next request waits
          return;
        }
        if (!this.#readHead(buf)) return;
      } else if (this.#mode === AUTH) {
        this.#pause(); // the next request waits for the credential's verdict
        return;
      } else if (this.#mode === BUSY) {
        const ex = this.#exchange as Exchange;
        if (!ex.wantsBody || !ex.canTakeBody) {
          this.#pause(); // the next request, or body the origin cannot take yet, waits
          return;
        }
        const n = ex.takeBody(buf);
        this.#buf = n >= buf.length ? undefined : buf.subarray(n);
        if (this.#buf === undefined && this.#ended && this.#exchange === ex && ex.wantsBody) {
          this.destroy(); // the client ended before the whole request body came
          return;
        }
      } else {
        return;
      }
    }
  }

  /** Reads one request head from `buf` and dispatches it; false when more bytes are needed. */
  #readHead(buf: Buffer): boolean {
    let head: RequestHead;
    try {
      const span = this.#heads.find(buf);
      if (span === undefined) {
        if (this.#ended) this.destroy();
        return false;
      }
      this.#buf = span.end === buf.length ? undefined : buf.subarray(span.end);
      head = parseRequestHead(
        buf.toString('latin1', span.start, span.end - 4),
        this.ctx.limits.maxHeaderFields,
      );
    } catch (err) {
      if (!(err instanceof HeadError)) throw err;
      this.#reject(err.status);
      return false;
    }
    this.#dispatch(head);
    return true;
  }

  #dispatch(head: RequestHead): void {
    const started = clock();
    const route = routeRequest(head);
    if (route.kind === 'tunnel') {
      this.#connect(head, started);
      return;
    }
    if (route.kind === 'health') {
      // Health probes are not proxy traffic: answered, never logged.
      this.#own(head, 'text/plain', 'ok\n', `X-Proxy-Op-Instance: ${this.ctx.name}\r\n`);
      return;
    }
    if (route.kind === 'bans') {
      this.#bans(head, started);
      return;
    }
    if (route.kind === 'metrics') {
      // The parents' metrics, for allowed sources with the gateway's credential (when it has one).
      const parents = this.ctx.parents;
      if (parents === undefined) this.answer(400, ORIGIN_FORM, head.method, '/metrics', started, 0);
      else if (!this.#allowed) this.answer(403, NOT_ALLOWED, head.method, '/metrics', started, 0);
      else
        this.#authorize(head, '/metrics', started, () =>
          this.#own(head, METRICS, metricsText(parents), ''),
        );
      return;
    }
    if ((route.kind === 'forward' || route.reason !== 'origin-form') && !this.#allowed) {
      this.answer(403, NOT_ALLOWED, head.method, head.target, started, 0);
      return;
    }
    if (route.kind === 'refuse') {
      this.answer(route.status, route.text, head.method, route.logTarget, started, 0);
      return;
    }
    const target = route.target;
    this.#authorize(head, target.logTarget, started, (user, params) => {
      this.#mode = BUSY;
      this.#bodySince = started;
      const ex = new Exchange(this, head, target, user, params);
      this.#exchange = ex;
      if (head.expectContinue && head.minor === 1 && ex.wantsBody) {
        this.write('HTTP/1.1 100 Continue\r\n\r\n');
      }
      ex.start();
    });
  }

  /** The exchange is over; the connection serves the next request or closes. */
  exchangeDone(keepAlive: boolean): void {
    this.#exchange = undefined;
    this.#served++;
    if (this.#mode === DONE) return;
    if (!keepAlive || this.ctx.closing || (this.#ended && this.#buf === undefined)) {
      this.#finish(false);
      return;
    }
    this.#mode = HEAD;
    this.#idleSince = clock();
    this.#headSince = this.#idleSince;
    const socket = this.socket;
    if (socket.writableLength > 0) {
      // The client has not taken the answer yet: count it, and know when it has.
      this.#held++;
      socket.write(EMPTY, this.#flushed);
    }
    this.#release();
  }

  readonly #flushed = (): void => {
    this.#held--;
    if (this.#holding) this.#release();
  };

  /**
   * Reads the next request, unless the client has left too much unread
   * (`maxPipelinedRequests` answers, or a full buffer): then it waits, and
   * the client's further requests stay unread.
   */
  #release(): void {
    if (this.#mode !== HEAD) return;
    if (this.#held >= this.ctx.limits.maxPipelinedRequests || this.socket.writableNeedDrain) {
      this.#holding = true;
      this.#pause(); // what the client sends meanwhile stays unread
      return;
    }
    if (this.#holding) {
      this.#holding = false;
      // The wait for the client is not the next request's head time.
      this.#idleSince = clock();
      this.#headSince = this.#idleSince;
      if (this.#ended && this.#buf === undefined) {
        this.#finish(false); // it sent nothing more before it half-closed
        return;
      }
    }
    if (this.#paused) {
      this.#paused = false;
      this.socket.resume();
    }
    this.#pump();
  }

  /** The ban endpoint: nothing more is read while its answer is made. */
  #bans(head: RequestHead, started: number): void {
    const { parents, admin } = this.ctx;
    this.#hold(banEndpoint(parents, admin, head, this.address, this.#allowed), (a) => {
      if (a.status === 200) this.#own(head, a.type, a.text, a.fields);
      else this.answer(a.status, a.text, head.method, '/bans', started, 0, a.fields);
    });
  }

  /** Waits for `p` with nothing more read, then calls `then` (unless the client went away). */
  #hold<T>(p: Promise<T>, then: (v: T) => void): void {
    this.#mode = AUTH;
    void p.then((v) => {
      if (this.#mode !== AUTH) return; // the client went away meanwhile
      this.#mode = HEAD;
      then(v);
      if (this.#mode === BUSY || this.#mode === HEAD) this.resumeInput();
    });
  }

  /**
   * A `200` of the proxy's own (health, metrics): not logged, the body left
   * out for `HEAD`, the connection kept unless the request or a shutdown
   * closes it.
   */
  #own(head: RequestHead, type: string, text: string, fields: string): void {
    const close = this.ctx.closing || !head.keepAlive || head.framing.kind !== 'none';
    this.write(okAnswer(type, text, fields, head.method, close));
    if (close) this.#finish(false);
    else this.exchangeDone(true);
  }

  /**
   * Answers a request with an error of ours, logs it, and closes the
   * connection (a refused or failed request ends it).
   */
  answer(
    status: number,
    text: string,
    method: string,
    target: string,
    started: number,
    bytesIn: number,
    fields = '',
  ): void {
    this.#exchange = undefined;
    if (this.#mode === DONE) return;
    this.write(closingAnswer(status, text, method, fields));
    logEnded(this.ctx.log, {
      client: this.address,
      method,
      target,
      status,
      bytesIn,
      bytesOut: 0,
      started,
    });
    this.#finish(false);
  }

  /**
   * Calls `then` with the user the request authenticates as (undefined when
   * the proxy needs no authentication), at once or, while the password is
   * verified, once it is (nothing more is read meanwhile). A refusal is
   * answered instead: 407 with the challenge, 429 for a source that failed
   * too often, 503 when too many verifications run; the connection ends,
   * as after any refusal.
   */
  #authorize(
    head: RequestHead,
    target: string,
    started: number,
    then: (user: string | undefined, params?: UserParams) => void,
  ): void {
    const auth = this.ctx.auth;
    if (auth === undefined) {
      then(undefined);
      return;
    }
    const at = head.fields.lower.indexOf('proxy-authorization');
    const value = at < 0 ? undefined : head.fields.values[at];
    const outcome = auth.check(value, sourceKey(this.address));
    const decide = (o: AuthOutcome) => {
      if (o.kind === 'user') {
        then(o.user, o.params);
        return;
      }
      const r = auth.refusal(o);
      this.answer(r.status, r.text, head.method, target, started, 0, r.fields);
    };
    if (!(outcome instanceof Promise)) {
      decide(outcome);
      return;
    }
    this.#hold(outcome, decide);
  }

  /** A request we cannot read: a bare status, and the connection ends. */
  #reject(status: number): void {
    if (this.#mode === DONE) return;
    this.write(bareAnswer(status));
    // The client may still be sending what we could not read: it gets time to read the answer.
    this.#finish(true);
  }

  /**
   * Ends the connection. After a whole request, it closes once what was
   * written is sent (as node:http does), however slowly the client reads
   * it (the idle timeout still applies); after one it could not read, it
   * lingers until the client closes too, reading and dropping what comes,
   * and is cut a second later at most.
   */
  #finish(linger: boolean): void {
    this.#mode = DONE;
    this.#holding = false;
    this.#buf = undefined;
    if (this.#paused) this.socket.resume(); // read and drop what the client still sends
    if (linger) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1_000).unref();
    } else this.socket.destroySoon();
  }

  #connect(head: RequestHead, started: number): void {
    const open = (user: string | undefined, params?: UserParams) => {
      this.#mode = TUNNEL;
      this.socket.off('data', this.#onData);
      const rest = this.#buf ?? Buffer.alloc(0);
      this.#buf = undefined;
      openTunnel(this.ctx, this.socket, head.target, rest, {
        allowed: this.#allowed,
        source: this.address,
        user,
        started,
        params,
        session: this.ctx.parents?.sessionOf(this.address, head.fields.lower, head.fields.values),
      });
    };
    if (this.#allowed) this.#authorize(head, head.target, started, open);
    else open(undefined);
  }
}
