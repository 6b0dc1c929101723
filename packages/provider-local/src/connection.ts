/**
 * One client connection to the proxy: request heads read from the bytes
 * (bounded in size and time), answered in order one at a time (pipelined
 * requests wait their turn, held back by backpressure), and each handed to
 * the health check, a refusal, an HTTP forward or a CONNECT tunnel.
 *
 * @module
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AccessLog } from './access-log.js';
import type { SourceList } from './cidr.js';
import { Exchange, httpDate } from './exchange.js';
import {
  HeadError,
  headEnd,
  parseHttpTarget,
  parseRequestHead,
  type RequestHead,
} from './http1.js';
import type { ProxyLimits } from './limits.js';
import { openTunnel } from './tunnel.js';
import type { UpstreamPool } from './upstream.js';

/** What every connection of one proxy shares. */
export interface ProxyContext {
  readonly name: string;
  readonly limits: ProxyLimits;
  readonly allowed: SourceList;
  readonly log: AccessLog | undefined;
  readonly pool: UpstreamPool;
  readonly conns: Set<ClientConn>;
  readonly tunnels: Set<Duplex>;
  closing: boolean;
}

/** How long a kept-open client connection may wait for its next request, in ms. */
export const KEEP_ALIVE_MS = 5_000;

const HEAD = 0;
const BUSY = 1;
const TUNNEL = 2;
const DONE = 3;

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  417: 'Expectation Failed',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** A client connection. */
export class ClientConn {
  readonly ctx: ProxyContext;
  readonly socket: Socket;
  readonly address: string;
  private allowed: boolean | undefined;
  private mode = HEAD;
  /** Bytes read and not yet used. */
  private buf: Buffer | undefined;
  private searched = 0;
  private exchange: Exchange | undefined;
  private served = 0;
  /** When the head being read (or awaited on a new connection) began. */
  private headSince: number;
  /** When the connection last became idle between requests. */
  private idleSince = 0;
  private ended = false;
  private paused = false;

  constructor(ctx: ProxyContext, socket: Socket) {
    this.ctx = ctx;
    this.socket = socket;
    this.address = socket.remoteAddress ?? '';
    this.headSince = performance.now();
    ctx.conns.add(this);
    socket.setTimeout(ctx.limits.idleTimeoutMs, () => socket.destroy());
    socket.on('data', this.onData);
    socket.on('end', () => this.onEnd());
    socket.on('drain', () => this.exchange?.onClientDrain());
    socket.on('error', () => {});
    socket.on('close', () => {
      this.mode = DONE;
      ctx.conns.delete(this);
      const ex = this.exchange;
      this.exchange = undefined;
      ex?.clientGone();
    });
  }

  /** True between requests, with nothing read of the next one. */
  get idle(): boolean {
    return this.mode === HEAD && this.buf === undefined;
  }

  /** Applies the head timeout and the keep-alive timeout; called about once a second. */
  sweep(now: number): void {
    if (this.mode !== HEAD) return;
    if (this.buf !== undefined || this.served === 0) {
      if (now - this.headSince > this.ctx.limits.headersTimeoutMs) this.reject(408);
    } else if (now - this.idleSince > KEEP_ALIVE_MS) {
      this.socket.destroy();
    }
  }

  write(data: Buffer | string): boolean {
    return typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
  }

  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  destroy(): void {
    this.mode = DONE;
    this.socket.destroy();
  }

  /** Reads again after the current exchange could not take more input. */
  resumeInput(): void {
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    this.pump();
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.mode === DONE) return;
    if (this.buf === undefined) {
      this.buf = chunk;
      if (this.mode === HEAD && this.served > 0) this.headSince = performance.now();
    } else {
      this.buf = Buffer.concat([this.buf, chunk]);
    }
    this.pump();
  };

  private onEnd(): void {
    this.ended = true;
    if (this.mode === HEAD) {
      // A half-sent head is dropped; a connection between requests is closed.
      if (this.buf === undefined) this.socket.end();
      else this.destroy();
    } else if (this.mode === BUSY && this.exchange?.wantsBody) {
      this.destroy(); // the request body was cut short
    }
  }

  private pause(): void {
    if (!this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** Uses the bytes read as far as the current state allows. */
  private pump(): void {
    for (;;) {
      const buf = this.buf;
      if (buf === undefined) return;
      if (this.mode === HEAD) {
        if (!this.readHead(buf)) return;
      } else if (this.mode === BUSY) {
        const ex = this.exchange as Exchange;
        if (!ex.wantsBody || !ex.canTakeBody) {
          this.pause(); // the next request, or body the origin cannot take yet, waits
          return;
        }
        const n = ex.takeBody(buf);
        this.buf = n >= buf.length ? undefined : buf.subarray(n);
      } else {
        return;
      }
    }
  }

  /** Reads one request head from `buf` and dispatches it; false when more bytes are needed. */
  private readHead(input: Buffer): boolean {
    let buf = input;
    // Empty lines before a request line are dropped (RFC 9112 §2.2).
    let from = 0;
    while (from + 1 < buf.length && buf[from] === 13 && buf[from + 1] === 10) from += 2;
    if (from > 0) {
      this.searched = 0;
      if (from === buf.length) {
        this.buf = undefined;
        return false;
      }
      buf = buf.subarray(from);
      this.buf = buf;
    }
    const limit = this.ctx.limits.maxHeaderBytes;
    const end = headEnd(buf, 0, this.searched);
    if (end < 0) {
      if (buf.length > limit) this.reject(431);
      else if (this.ended) this.destroy();
      else this.searched = buf.length;
      return false;
    }
    if (end - 4 > limit) {
      this.reject(431);
      return false;
    }
    this.buf = end === buf.length ? undefined : buf.subarray(end);
    this.searched = 0;
    let head: RequestHead;
    try {
      head = parseRequestHead(buf.toString('latin1', 0, end - 4));
    } catch (err) {
      if (!(err instanceof HeadError)) throw err;
      this.reject(400);
      return false;
    }
    this.dispatch(head);
    return true;
  }

  private dispatch(head: RequestHead): void {
    const started = performance.now();
    if (head.method === 'CONNECT') {
      this.connect(head, started);
      return;
    }
    const url = head.target;
    if (url.startsWith('/')) {
      if (url === '/healthz' && (head.method === 'GET' || head.method === 'HEAD')) {
        this.health(head);
      } else {
        this.answer(
          400,
          'a proxy request needs an absolute URI (http://host/path)\n',
          head.method,
          targetForLog(url),
          started,
          0,
        );
      }
      return;
    }
    this.allowed ??= this.ctx.allowed.allows(this.address);
    if (!this.allowed) {
      this.answer(
        403,
        'this source may not use the proxy\n',
        head.method,
        targetForLog(url),
        started,
        0,
      );
      return;
    }
    const target = parseHttpTarget(url);
    if (target === 'not-a-url') {
      this.answer(
        400,
        'the request URI is not a URL\n',
        head.method,
        targetForLog(url),
        started,
        0,
      );
      return;
    }
    if (target === 'not-http') {
      this.answer(
        400,
        'only http:// URIs are forwarded; use CONNECT for TLS\n',
        head.method,
        targetForLog(url),
        started,
        0,
      );
      return;
    }
    const expect = head.fields.lower.indexOf('expect');
    if (expect >= 0 && !head.expectContinue) {
      this.answer(
        417,
        'only Expect: 100-continue is understood\n',
        head.method,
        target.logTarget,
        started,
        0,
      );
      return;
    }
    this.mode = BUSY;
    const ex = new Exchange(this, head, target);
    this.exchange = ex;
    if (head.expectContinue && head.minor === 1 && ex.wantsBody) {
      this.write('HTTP/1.1 100 Continue\r\n\r\n');
    }
    ex.start();
  }

  /** The exchange is over; the connection serves the next request or closes. */
  exchangeDone(keepAlive: boolean): void {
    this.exchange = undefined;
    this.served++;
    if (this.mode === DONE) return;
    if (!keepAlive || this.ctx.closing || (this.ended && this.buf === undefined)) {
      this.finish(false);
      return;
    }
    this.mode = HEAD;
    this.idleSince = performance.now();
    this.headSince = this.idleSince;
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    this.pump();
  }

  private health(head: RequestHead): void {
    const body = head.method === 'HEAD' ? '' : 'ok\n';
    const close = this.ctx.closing || !head.keepAlive || head.framing.kind !== 'none';
    this.write(
      `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n` +
        `X-Proxy-Op-Instance: ${this.ctx.name}\r\nDate: ${httpDate()}\r\n` +
        `${close ? 'Connection: close\r\n' : ''}\r\n${body}`,
    );
    // Health probes are not proxy traffic: answered, never logged.
    if (close) this.finish(false);
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
  ): void {
    this.exchange = undefined;
    if (this.mode === DONE) return;
    this.write(
      `HTTP/1.1 ${status} ${REASONS[status] ?? ''}\r\nContent-Type: text/plain\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nDate: ${httpDate()}\r\n` +
        `Connection: close\r\n\r\n${text}`,
    );
    this.ctx.log?.write({
      time: new Date().toISOString(),
      client: this.address,
      method,
      target,
      status,
      bytesIn,
      bytesOut: 0,
      durationMs: Math.round(performance.now() - started),
    });
    this.finish(false);
  }

  /** A request we cannot read: a bare status, and the connection ends. */
  private reject(status: number): void {
    if (this.mode === DONE) return;
    this.write(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
    // The client may still be sending what we could not read: it gets time to read the answer.
    this.finish(true);
  }

  /**
   * Ends the connection. After a whole request, it closes once what was
   * written is sent (as node:http does), however slowly the client reads
   * it (the idle timeout still applies); after one it could not read, it
   * lingers until the client closes too, reading and dropping what comes,
   * and is cut a second later at most.
   */
  private finish(linger: boolean): void {
    this.mode = DONE;
    this.buf = undefined;
    if (this.paused) this.socket.resume(); // read and drop what the client still sends
    if (linger) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1_000).unref();
    } else this.socket.destroySoon();
  }

  private connect(head: RequestHead, started: number): void {
    this.mode = TUNNEL;
    this.socket.off('data', this.onData);
    const rest = this.buf ?? Buffer.alloc(0);
    this.buf = undefined;
    this.allowed ??= this.ctx.allowed.allows(this.address);
    openTunnel(this.ctx, this.socket, head.target, rest, this.allowed, this.address, started);
  }
}

/** The target for the access log: scheme, host and path, never the query (it may hold tokens). */
function targetForLog(url: string): string {
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)).slice(0, 200);
}
