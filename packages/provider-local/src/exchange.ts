/**
 * One forwarded HTTP request: its head rewritten for the origin, its body
 * and the answer passed through as bytes with backpressure, framing kept
 * (a chunked body is scanned, never re-encoded, except for an HTTP/1.0
 * client), and the connection to the origin handed back to the pool when
 * the answer is complete.
 *
 * @module
 */
import type { ClientConn } from './connection.js';
import {
  ChunkedScanner,
  endToEndFields,
  fieldList,
  type HttpTarget,
  headEnd,
  parseResponseHead,
  type RequestHead,
  type ResponseHead,
} from './http1.js';
import type { Upstream, UpstreamOwner, UpstreamWaiter } from './upstream.js';

/** Methods whose request may be sent again (RFC 9110 §9.2.2), as Squid retries them. */
const RETRIABLE = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE']);
/** Largest response head read from an origin (Squid's `reply_header_max_size`). */
const MAX_RESPONSE_HEAD = 64 * 1024;
/** Bodies up to this size are sent to the client in one buffer with their head. */
const COALESCE_BYTES = 16 * 1024;

const SKIP_REQUEST: ReadonlySet<string> = new Set(['host', 'via', 'content-length']);
const SKIP_NONE: ReadonlySet<string> = new Set();
const SKIP_LENGTH: ReadonlySet<string> = new Set(['content-length']);

/** A request being forwarded to an origin for one client connection. */
export class Exchange implements UpstreamWaiter, UpstreamOwner {
  /** A kept-open connection may carry it: it could be sent again (Squid's rule). */
  reuse: boolean;
  private readonly conn: ClientConn;
  private readonly head: RequestHead;
  private readonly target: HttpTarget;
  private readonly started = performance.now();
  private readonly requestHead: string;
  private upstream: Upstream | undefined;
  private waiting = false;
  private retried = false;
  private finished = false;
  /** Request body still to pass: bytes (length framing) or a scanner (chunked). */
  private reqLeft: number;
  private readonly reqChunks: ChunkedScanner | undefined;
  /** Writes to the origin are held back until it drains. */
  private blocked = false;
  private gotBytes = false;
  // The answer.
  private res: ResponseHead | undefined;
  private resBuf: Buffer | undefined;
  private resSearched = 0;
  private resLeft = 0;
  private resChunks: ChunkedScanner | undefined;
  /** A chunked answer is decoded for an HTTP/1.0 client. */
  private decode = false;
  /** A close-delimited answer is sent chunked to an HTTP/1.1 client. */
  private rechunk = false;
  /** The origin sent more than the answer: its connection is not kept. */
  private surplus = false;
  private keepClient = false;
  private status = 0;
  private bytesIn = 0;
  private bytesOut = 0;

  constructor(conn: ClientConn, head: RequestHead, target: HttpTarget) {
    this.conn = conn;
    this.head = head;
    this.target = target;
    const f = head.framing;
    this.reqLeft = f.kind === 'length' ? f.length : f.kind === 'chunked' ? 1 : 0;
    this.reqChunks = f.kind === 'chunked' ? new ChunkedScanner() : undefined;
    this.reuse =
      RETRIABLE.has(head.method) && (f.kind === 'none' || (f.kind === 'length' && f.length === 0));
    this.requestHead = requestHead(head, target);
  }

  /** True while request body bytes are still expected from the client. */
  get wantsBody(): boolean {
    return this.reqLeft > 0;
  }

  /** True when body bytes can be passed on now. */
  get canTakeBody(): boolean {
    return this.upstream !== undefined && !this.blocked;
  }

  start(): void {
    this.waiting = true;
    this.conn.ctx.pool.acquire(this.target.host, this.target.port, this);
  }

  onUpstream(u: Upstream): void {
    this.waiting = false;
    if (this.finished) {
      this.conn.ctx.pool.release(u, true);
      return;
    }
    this.upstream = u;
    u.owner = this;
    if (!u.socket.write(this.requestHead, 'latin1')) this.blocked = true;
    if (this.reqLeft > 0) this.conn.resumeInput();
  }

  /** Passes request body bytes from `buf`; returns how many were taken. */
  takeBody(buf: Buffer): number {
    const u = this.upstream as Upstream;
    let n: number;
    if (this.reqChunks === undefined) {
      n = Math.min(this.reqLeft, buf.length);
      this.reqLeft -= n;
    } else {
      try {
        n = this.reqChunks.scan(buf, 0, buf.length);
      } catch {
        this.fail(400, 'a malformed chunked request body\n');
        return buf.length;
      }
      if (this.reqChunks.done) this.reqLeft = 0;
    }
    this.bytesIn += n;
    if (!u.socket.write(n === buf.length ? buf : buf.subarray(0, n))) this.blocked = true;
    return n;
  }

  onUpstreamDrain(): void {
    if (!this.blocked) return;
    this.blocked = false;
    this.conn.resumeInput();
  }

  /** The client can take more of the answer. */
  onClientDrain(): void {
    this.upstream?.socket.resume();
  }

  onUpstreamData(chunk: Buffer): void {
    this.gotBytes = true;
    if (this.res !== undefined) {
      this.body(chunk, 0);
      return;
    }
    let buf = this.resBuf === undefined ? chunk : Buffer.concat([this.resBuf, chunk]);
    for (;;) {
      const end = headEnd(buf, 0, this.resSearched);
      if (end < 0) {
        if (buf.length > MAX_RESPONSE_HEAD) {
          this.fail(502, 'upstream failed: HeadTooLarge\n');
          return;
        }
        this.resBuf = buf;
        this.resSearched = buf.length;
        return;
      }
      let res: ResponseHead;
      try {
        res = parseResponseHead(buf.toString('latin1', 0, end - 4), this.head.method);
      } catch {
        this.fail(502, 'upstream failed: BadResponse\n');
        return;
      }
      this.resBuf = undefined;
      this.resSearched = 0;
      if (res.status >= 200) {
        this.respond(res, buf, end);
        return;
      }
      if (res.status === 101) {
        this.fail(502, 'upstream failed: UnexpectedUpgrade\n');
        return;
      }
      // Interim answers go on to an HTTP/1.1 client; a 100 Continue was already sent by us.
      if (res.status !== 100 && this.head.minor === 1) {
        this.conn.write(
          `HTTP/1.1 ${res.status} ${res.reason}\r\n${endToEndFields(res, SKIP_NONE)}\r\n`,
        );
      }
      if (end === buf.length) return;
      buf = buf.subarray(end);
    }
  }

  private respond(res: ResponseHead, buf: Buffer, at: number): void {
    const ctx = this.conn.ctx;
    this.res = res;
    this.status = res.status;
    const oneZero = this.head.minor === 0;
    const f = res.framing;
    let framing = '';
    if (f.kind === 'length') {
      this.resLeft = f.length;
      framing = `Content-Length: ${f.length}\r\n`;
    } else if (f.kind === 'chunked') {
      this.resChunks = new ChunkedScanner();
      this.decode = oneZero;
      if (!oneZero) framing = `Transfer-Encoding: ${res.transferEncoding}\r\n`;
    } else if (f.kind === 'close') {
      this.rechunk = !oneZero;
      if (this.rechunk) framing = 'Transfer-Encoding: chunked\r\n';
    }
    this.keepClient =
      this.head.keepAlive &&
      !ctx.closing &&
      !(oneZero && (f.kind === 'close' || f.kind === 'chunked'));
    const connection = !this.keepClient
      ? 'Connection: close\r\n'
      : oneZero
        ? 'Connection: keep-alive\r\n'
        : '';
    // The framing fields are ours: a Content-Length the body does not follow is never passed on.
    const skip = f.kind === 'none' ? SKIP_NONE : SKIP_LENGTH;
    const head =
      `HTTP/1.1 ${res.status} ${res.reason}\r\n${endToEndFields(res, skip)}${framing}` +
      `${res.hasDate ? '' : `Date: ${httpDate()}\r\n`}${connection}\r\n`;
    const rest = buf.length - at;
    if (f.kind === 'length' && rest > 0 && rest <= COALESCE_BYTES) {
      // The whole of a small answer in one write: head and body together.
      const n = Math.min(rest, this.resLeft);
      const out = Buffer.allocUnsafe(head.length + n);
      out.write(head, 0, 'latin1');
      buf.copy(out, head.length, at, at + n);
      this.resLeft -= n;
      this.bytesOut += n;
      if (at + n < buf.length) this.surplus = true;
      this.send(out);
      if (this.resLeft === 0) this.complete();
      return;
    }
    this.conn.write(head);
    if (f.kind === 'none' || (f.kind === 'length' && f.length === 0)) {
      if (rest > 0) this.surplus = true;
      this.complete();
      return;
    }
    if (rest > 0) this.body(buf, at);
  }

  private body(buf: Buffer, at: number): void {
    if (this.finished) return;
    const res = this.res as ResponseHead;
    switch (res.framing.kind) {
      case 'length': {
        const n = Math.min(this.resLeft, buf.length - at);
        this.resLeft -= n;
        this.bytesOut += n;
        if (at + n < buf.length) this.surplus = true;
        this.send(at === 0 && n === buf.length ? buf : buf.subarray(at, at + n));
        if (this.resLeft === 0) this.complete();
        return;
      }
      case 'chunked': {
        const scanner = this.resChunks as ChunkedScanner;
        let end: number;
        try {
          end = this.decode
            ? scanner.scan(buf, at, buf.length, (b, s, e) => this.send(b.subarray(s, e)))
            : scanner.scan(buf, at, buf.length);
        } catch {
          this.cut();
          return;
        }
        this.bytesOut += end - at;
        if (!this.decode) this.send(at === 0 && end === buf.length ? buf : buf.subarray(at, end));
        if (scanner.done) {
          if (end < buf.length) this.surplus = true;
          this.complete();
        }
        return;
      }
      case 'close': {
        const data = at === 0 ? buf : buf.subarray(at);
        this.bytesOut += data.length;
        if (this.rechunk) {
          this.conn.cork();
          this.conn.write(`${data.length.toString(16)}\r\n`);
          this.conn.write(data);
          this.send('\r\n');
          this.conn.uncork();
        } else this.send(data);
        return;
      }
      default:
        this.surplus = true;
    }
  }

  /** Writes to the client; a full client buffer pauses the origin until it drains. */
  private send(data: Buffer | string): void {
    if (!this.conn.write(data)) this.upstream?.socket.pause();
  }

  onUpstreamEnd(): void {
    if (this.finished) return;
    if (this.res?.framing.kind === 'close') {
      if (this.rechunk) this.conn.write('0\r\n\r\n');
      this.complete();
      return;
    }
    this.upstream?.socket.destroy(); // onUpstreamClose decides what follows
  }

  onUpstreamClose(error: Error | undefined, timedOut: boolean): void {
    this.upstream = undefined;
    if (this.finished) return;
    if (this.res === undefined && !this.gotBytes && this.reuse && !this.retried && !timedOut) {
      // The origin closed a kept-open connection as the request left: once more, on a new one.
      this.retried = true;
      this.reuse = false;
      this.blocked = false;
      this.start();
      return;
    }
    if (this.res !== undefined) {
      this.cut();
      return;
    }
    const code = timedOut
      ? 'TimeoutError'
      : ((error as NodeJS.ErrnoException | undefined)?.code ?? 'ECONNRESET');
    this.fail(timedOut ? 504 : 502, `upstream failed: ${code}\n`);
  }

  /** The client went away: the origin's connection goes too, unless the answer was complete. */
  clientGone(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.waiting) this.conn.ctx.pool.cancel(this.target.host, this.target.port, this);
    this.dropUpstream();
    this.log(this.status === 0 ? 502 : this.status);
  }

  /** Lets go of the origin connection, which cannot be reused mid-answer. */
  private dropUpstream(): void {
    const u = this.upstream;
    this.upstream = undefined;
    if (u !== undefined) {
      u.owner = undefined;
      u.socket.destroy();
    }
  }

  /** Answers the client with an error, or cuts it when the answer had begun. */
  private fail(status: number, text: string): void {
    if (this.finished) return;
    if (this.res !== undefined) {
      this.cut();
      return;
    }
    this.finished = true;
    this.dropUpstream();
    this.conn.answer(
      status,
      text,
      this.head.method,
      this.target.logTarget,
      this.started,
      this.bytesIn,
    );
  }

  /** The answer broke off after it had begun: the client connection is cut. */
  private cut(): void {
    if (this.finished) return;
    this.finished = true;
    this.dropUpstream();
    this.log(502);
    this.conn.destroy();
  }

  private complete(): void {
    if (this.finished) return;
    this.finished = true;
    const u = this.upstream;
    this.upstream = undefined;
    const res = this.res as ResponseHead;
    const bodyDone = this.reqLeft === 0;
    if (u !== undefined) {
      u.socket.resume();
      this.conn.ctx.pool.release(u, res.keepAlive && bodyDone && !this.surplus);
    }
    this.log(res.status);
    this.conn.exchangeDone(this.keepClient && bodyDone);
  }

  private log(status: number): void {
    const log = this.conn.ctx.log;
    if (log === undefined) return;
    log.write({
      time: new Date().toISOString(),
      client: this.conn.address,
      method: this.head.method,
      target: this.target.logTarget,
      status,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      durationMs: Math.round(performance.now() - this.started),
    });
  }
}

/** The head sent to the origin: origin-form target, Host from the URI, hop-by-hop fields gone. */
function requestHead(head: RequestHead, target: HttpTarget): string {
  const f = head.framing;
  const framing =
    f.kind === 'length'
      ? `Content-Length: ${f.length}\r\n`
      : f.kind === 'chunked'
        ? `Transfer-Encoding: ${head.transferEncoding}\r\n`
        : '';
  const via = fieldList(head, 'via');
  const ours = `1.${head.minor} proxy-op`;
  return (
    `${head.method} ${target.path} HTTP/1.1\r\nHost: ${target.authority}\r\n` +
    `${endToEndFields(head, SKIP_REQUEST)}${framing}Via: ${via === '' ? ours : `${via}, ${ours}`}\r\n` +
    'Connection: keep-alive\r\n\r\n'
  );
}

let dateSecond = 0;
let dateText = '';

/** The current time as an HTTP date, computed once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
