/**
 * One forwarded HTTP request: its head rewritten for the origin, its body
 * and the answer passed through as bytes with backpressure, framing kept
 * (a chunked body is scanned, never re-encoded, except for an HTTP/1.0
 * client), and the connection to the origin handed back to the pool when
 * the answer is complete.
 *
 * @module
 */
import { logEnded } from './access-log.js';
import { clientAnswer, nextAnswerHead, SKIP_NONE } from './answer-head.js';
import { now as clock } from './clock.js';
import type { ExchangeClient } from './context.js';
import { refusalOf, refusalText } from './destination.js';
import { endToEndFields, type RequestHead, type ResponseHead } from './http1.js';
import { ParentLease } from './parent-lease.js';
import type { Parent } from './parents.js';
import { BodyReader, HeadReader } from './reader.js';
import { requestHead } from './request-head.js';
import { NONE_CAME, RETRY_AFTER } from './steering.js';
import type { HttpTarget } from './target.js';
import type { Upstream, UpstreamOwner, UpstreamWaiter } from './upstream.js';
import type { UserParams } from './user-params.js';

/** Methods whose request may be sent again (RFC 9110 §9.2.2), as Squid retries them. */
const RETRIABLE = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE']);
/** Largest response head read from an origin (Squid's `reply_header_max_size`). */
const MAX_RESPONSE_HEAD = 64 * 1024;
/** Bodies up to this size are sent to the client in one buffer with their head. */
const COALESCE_BYTES = 16 * 1024;
/** Interim (1xx) answers passed on before the final one; more is an origin gone wrong. */
const MAX_INTERIM = 16;

/** A request being forwarded to an origin for one client connection. */
export class Exchange implements UpstreamWaiter, UpstreamOwner {
  /** A kept-open connection may carry it: it could be sent again (Squid's rule). */
  reuse: boolean;
  readonly #conn: ExchangeClient;
  readonly #head: RequestHead;
  readonly #target: HttpTarget;
  /** The user the request authenticated as, when the proxy requires it. */
  readonly #user: string | undefined;
  readonly #started = clock();
  #requestHead: string;
  #upstream: Upstream | undefined;
  /** Where the connection goes: the origin, or the parent carrying the request. */
  #dialHost: string;
  #dialPort: number;
  /** Its hold on a parent, when the proxy has parents (and its refusal of a filter without). */
  readonly #lease: ParentLease;
  /** The session it belongs to (for the egress address and kept connections). */
  readonly #session: string | undefined;
  #sentAt = 0;
  #waiting = false;
  /** The ban rule the last parent's answer matched, named to the client when it is passed on. */
  #banRule: string | undefined;
  /** Times it was sent again after a ban. */
  #banRetries = 0;
  #retried = false;
  #finished = false;
  /** The request body still to pass. */
  readonly #reqBody: BodyReader;
  /** Writes to the origin are held back until it drains. */
  #blocked = false;
  #gotBytes = false;
  // The answer.
  #res: ResponseHead | undefined;
  #resBuf: Buffer | undefined;
  readonly #resHeads = new HeadReader(MAX_RESPONSE_HEAD);
  #resBody: BodyReader | undefined;
  #interim = 0;
  /** A chunked answer is decoded for an HTTP/1.0 client. */
  #decode = false;
  /** A close-delimited answer is sent chunked to an HTTP/1.1 client. */
  #rechunk = false;
  /** The origin sent more than the answer: its connection is not kept. */
  #surplus = false;
  #keepClient = false;
  #status = 0;
  #bytesIn = 0;
  #bytesOut = 0;

  constructor(
    conn: ExchangeClient,
    head: RequestHead,
    target: HttpTarget,
    user: string | undefined,
    params?: UserParams,
  ) {
    this.#conn = conn;
    this.#head = head;
    this.#target = target;
    this.#user = user;
    const f = head.framing;
    this.#reqBody = new BodyReader(f);
    this.reuse =
      RETRIABLE.has(head.method) && (f.kind === 'none' || (f.kind === 'length' && f.length === 0));
    this.#dialHost = target.host;
    this.#dialPort = target.port;
    const parents = conn.ctx.parents;
    const fallback = parents?.sessionOf(conn.address, head.fields.lower, head.fields.values);
    this.#lease = new ParentLease(parents, {
      user,
      params,
      fallback,
      pin: conn.pin,
      cut: this.#cutByDrain,
      host: target.host,
    });
    this.#session = params?.session ?? fallback;
    this.#requestHead = parents === undefined ? requestHead(head, target) : '';
  }

  /** True while request body bytes are still expected from the client. */
  get wantsBody(): boolean {
    return !this.#reqBody.done;
  }

  /** True when body bytes can be passed on now. */
  get canTakeBody(): boolean {
    return this.#upstream !== undefined && !this.#blocked;
  }

  start(): void {
    const { parents, destinations } = this.#conn.ctx;
    const refused = destinations.check(this.#target.host, this.#target.port, 'http');
    if (refused !== undefined) {
      this.#fail(403, refusalText(refused));
      return;
    }
    const refusal = this.#lease.refusal;
    if (refusal !== undefined) {
      this.#fail(502, `${refusal}\n`);
      return;
    }
    if (parents === undefined) this.#dialHost = destinations.dialHost(this.#target.host);
    if (parents !== undefined) {
      const choice = this.#lease.choose(parents, 'request');
      if (choice.kind === 'hold') {
        // The pool is at zero: the request waits for a parent to come.
        void parents.waitForParent().then((came) => {
          if (this.#finished) return;
          if (came) this.start();
          else this.#fail(503, `${NONE_CAME}\n`, RETRY_AFTER);
        });
        return;
      }
      if (choice.kind === 'none') {
        this.#fail(502, `${choice.text}\n`);
        return;
      }
      const p = choice.parent;
      this.#dialHost = p.host;
      this.#dialPort = p.port;
      const strip = parents.session === 'header' ? parents.sessionHeader : undefined;
      this.#requestHead = requestHead(this.#head, this.#target, p, strip);
    }
    this.#waiting = true;
    this.#conn.ctx.pool.acquire(this.#dialHost, this.#dialPort, this, this.#session);
  }

  /** The parent left the set and its drain is over. */
  readonly #cutByDrain = (): void => {
    if (this.#res === undefined) this.#fail(502, 'the upstream proxy left the pool\n');
    else this.#cut();
  };

  /** Lets go of the parent, counting what went through it. */
  #leaveParent(): void {
    this.#lease.leave(this.#bytesIn, this.#bytesOut);
  }

  onUpstream(u: Upstream): void {
    this.#waiting = false;
    this.#sentAt = clock();
    if (this.#finished) {
      this.#conn.ctx.pool.release(u, true);
      return;
    }
    this.#upstream = u;
    u.owner = this;
    if (!u.socket.write(this.#requestHead, 'latin1')) this.#blocked = true;
    if (this.wantsBody) this.#conn.resumeInput();
  }

  /** Passes request body bytes from `buf`; returns how many were taken. */
  takeBody(buf: Buffer): number {
    const u = this.#upstream as Upstream;
    let n: number;
    try {
      n = this.#reqBody.scan(buf, 0, buf.length);
    } catch {
      this.#fail(400, 'a malformed chunked request body\n');
      return buf.length;
    }
    this.#bytesIn += n;
    if (!u.socket.write(n === buf.length ? buf : buf.subarray(0, n))) this.#blocked = true;
    return n;
  }

  onUpstreamDrain(): void {
    if (!this.#blocked) return;
    this.#blocked = false;
    this.#conn.resumeInput();
  }

  /** The client can take more of the answer. */
  onClientDrain(): void {
    this.#upstream?.socket.resume();
  }

  /** The client stopped sending the request body it announced. */
  bodyTimedOut(): void {
    this.#fail(408, 'the request body stopped coming\n');
  }

  onUpstreamData(chunk: Buffer): void {
    const u = this.#upstream as Upstream;
    this.#gotBytes = true;
    if (this.#res !== undefined) this.#body(chunk, 0);
    else this.#answer(chunk);
    // What was written on may still point into the connection's read buffer.
    u.lend(this.#conn.socket);
  }

  /** Reads the answer's head (after any interim ones) from what the origin sent so far. */
  #answer(chunk: Buffer): void {
    let buf = this.#resBuf === undefined ? chunk : Buffer.concat([this.#resBuf, chunk]);
    for (;;) {
      const read = nextAnswerHead(this.#resHeads, buf, this.#head.method);
      if (read === undefined) {
        this.#resBuf = buf === chunk ? Buffer.from(chunk) : buf; // the read buffer is reused
        return;
      }
      if ('error' in read) {
        this.#fail(502, `upstream failed: ${read.error}\n`);
        return;
      }
      const { res, end } = read;
      this.#resBuf = undefined;
      const p = this.#lease.parent;
      if (p !== undefined && res.status === 407) {
        // The parent refused our credential: the client's request is not at fault.
        this.#conn.ctx.parents?.failed(p);
        this.#fail(502, `upstream ${p.name} refused the gateway's credential (407)\n`);
        return;
      }
      if (res.status >= 200) {
        p?.succeeded(clock() - this.#sentAt);
        if (p !== undefined && this.#banned(p, res)) return;
        this.#respond(res, buf, end);
        return;
      }
      if (res.status === 101) {
        this.#fail(502, 'upstream failed: UnexpectedUpgrade\n');
        return;
      }
      if (++this.#interim > MAX_INTERIM) {
        this.#fail(502, 'upstream failed: TooManyInterimAnswers\n');
        return;
      }
      // Interim answers go on to an HTTP/1.1 client; a 100 Continue was already sent by us.
      if (res.status !== 100 && this.#head.minor === 1) {
        this.#send(`HTTP/1.1 ${res.status} ${res.reason}\r\n${endToEndFields(res, SKIP_NONE)}\r\n`);
      }
      if (end === buf.length) return;
      buf = buf.subarray(end);
    }
  }

  /**
   * Whether the answer of parent `p` is a ban by a rule: the parent is then
   * kept from the host, and a request that can be sent again goes to
   * another parent (at most `bans.retries` times) with nothing of the ban
   * reaching the client (true); otherwise the answer is passed on, naming
   * the rule in `X-Proxy-Op-Ban` (false).
   */
  #banned(p: Parent, res: ResponseHead): boolean {
    const parents = this.#conn.ctx.parents;
    this.#banRule = parents?.bans.judge(p.name, this.#target.host, res, clock());
    if (parents === undefined || this.#banRule === undefined || !this.reuse) return false;
    if (this.#banRetries >= parents.bans.retries || !this.#lease.hasOther(parents)) return false;
    this.#banRetries++;
    // The banned answer goes nowhere: its connection is dropped, the request sent elsewhere.
    this.#dropUpstream();
    this.#leaveParent();
    this.#interim = 0;
    this.#gotBytes = false;
    this.#blocked = false;
    this.start();
    return true;
  }

  #respond(res: ResponseHead, buf: Buffer, at: number): void {
    const ctx = this.#conn.ctx;
    this.#res = res;
    this.#status = res.status;
    const f = res.framing;
    const body = new BodyReader(f);
    this.#resBody = body;
    const ban = this.#banRule === undefined ? '' : `X-Proxy-Op-Ban: ${this.#banRule}\r\n`;
    const framed = clientAnswer(res, this.#head, ctx.closing, `${this.#lease.fields()}${ban}`);
    this.#decode = framed.decode;
    this.#rechunk = framed.rechunk;
    this.#keepClient = framed.keepClient;
    const head = framed.head;
    const rest = buf.length - at;
    if (f.kind === 'length' && rest > 0 && rest <= COALESCE_BYTES) {
      // The whole of a small answer in one write: head and body together.
      const end = body.scan(buf, at, buf.length);
      const out = Buffer.allocUnsafe(head.length + end - at);
      out.write(head, 0, 'latin1');
      buf.copy(out, head.length, at, end);
      this.#bytesOut += end - at;
      if (end < buf.length) this.#surplus = true;
      this.#send(out);
      if (body.done) this.#complete();
      return;
    }
    this.#send(head);
    if (body.done) {
      if (rest > 0) this.#surplus = true;
      this.#complete();
      return;
    }
    if (rest > 0) this.#body(buf, at);
  }

  #body(buf: Buffer, at: number): void {
    if (this.#finished) return;
    const body = this.#resBody as BodyReader;
    let end: number;
    try {
      end = body.scan(buf, at, buf.length, this.#decode ? this.#sendRange : undefined);
    } catch {
      this.#cut();
      return;
    }
    const n = end - at;
    this.#bytesOut += n;
    if (!this.#decode && n > 0) {
      const data = at === 0 && end === buf.length ? buf : buf.subarray(at, end);
      if (this.#rechunk) {
        this.#conn.cork();
        this.#conn.write(`${n.toString(16)}\r\n`);
        this.#conn.write(data);
        this.#send('\r\n');
        this.#conn.uncork();
      } else this.#send(data);
    }
    if (body.done) {
      if (end < buf.length) this.#surplus = true;
      this.#complete();
    }
  }

  readonly #sendRange = (b: Buffer, start: number, end: number): void => {
    this.#send(b.subarray(start, end));
  };

  /** Writes to the client; a full client buffer pauses the origin until it drains. */
  #send(data: Buffer | string): void {
    if (!this.#conn.write(data)) this.#upstream?.socket.pause();
  }

  onUpstreamEnd(): void {
    if (this.#finished) return;
    if (this.#res?.framing.kind === 'close') {
      if (this.#rechunk) this.#conn.write('0\r\n\r\n');
      this.#complete();
      return;
    }
    this.#upstream?.socket.destroy(); // onUpstreamClose decides what follows
  }

  onUpstreamClose(error: Error | undefined, timedOut: boolean): void {
    const connected = this.#upstream?.connected === true;
    const reused = this.#upstream?.reused === true;
    this.#upstream = undefined;
    if (this.#finished) return;
    const refused = refusalOf(error);
    if (refused !== undefined) {
      this.#fail(403, refusalText(refused));
      return;
    }
    const p = this.#lease.parent;
    if (p !== undefined && this.#res === undefined && !this.#gotBytes && !reused) {
      this.#conn.ctx.parents?.failed(p);
      const others = this.#lease.hasOther(this.#conn.ctx.parents);
      if (!connected && this.#bytesIn === 0 && this.#lease.tried.size === 1 && others) {
        // The parent could not be reached and nothing of the request went anywhere: another one.
        this.#leaveParent();
        this.#blocked = false;
        this.start();
        return;
      }
    }
    if (this.#res === undefined && !this.#gotBytes && this.reuse && !this.#retried && !timedOut) {
      // The origin closed a kept-open connection as the request left: once more, on a new one.
      this.#retried = true;
      this.reuse = false;
      this.#blocked = false;
      // Not the parent's failure: it may carry the request again.
      if (p !== undefined) this.#lease.tried.delete(p);
      this.#leaveParent();
      this.start();
      return;
    }
    if (this.#res !== undefined) {
      this.#cut();
      return;
    }
    const code = timedOut
      ? 'TimeoutError'
      : ((error as NodeJS.ErrnoException | undefined)?.code ?? 'ECONNRESET');
    this.#fail(timedOut ? 504 : 502, `upstream failed: ${code}\n`);
  }

  /** The client went away: the origin's connection goes too, unless the answer was complete. */
  clientGone(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#waiting) this.#conn.ctx.pool.cancel(this.#dialHost, this.#dialPort, this);
    this.#dropUpstream();
    this.#leaveParent();
    this.#log(this.#status === 0 ? 502 : this.#status);
  }

  /** Lets go of the origin connection, which cannot be reused mid-answer. */
  #dropUpstream(): void {
    const u = this.#upstream;
    this.#upstream = undefined;
    if (u !== undefined) {
      u.owner = undefined;
      u.socket.destroy();
    }
  }

  /** Answers the client with an error, or cuts it when the answer had begun. */
  #fail(status: number, text: string, extra = ''): void {
    if (this.#finished) return;
    if (this.#res !== undefined) {
      this.#cut();
      return;
    }
    this.#finished = true;
    this.#dropUpstream();
    const fields = `${this.#lease.fields()}${extra}`;
    this.#leaveParent();
    this.#conn.answer(
      status,
      text,
      this.#head.method,
      this.#target.logTarget,
      this.#started,
      this.#bytesIn,
      fields,
    );
  }

  /** The answer broke off after it had begun: the client connection is cut. */
  #cut(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#dropUpstream();
    this.#leaveParent();
    this.#log(502);
    this.#conn.destroy();
  }

  #complete(): void {
    if (this.#finished) return;
    this.#finished = true;
    const u = this.#upstream;
    this.#upstream = undefined;
    const res = this.#res as ResponseHead;
    const bodyDone = !this.wantsBody;
    if (u !== undefined) {
      u.socket.resume();
      this.#conn.ctx.pool.release(u, res.keepAlive && bodyDone && !this.#surplus);
    }
    this.#leaveParent();
    this.#log(res.status);
    this.#conn.exchangeDone(this.#keepClient && bodyDone);
  }

  #log(status: number): void {
    logEnded(this.#conn.ctx.log, {
      client: this.#conn.address,
      user: this.#user,
      method: this.#head.method,
      target: this.#target.logTarget,
      status,
      bytesIn: this.#bytesIn,
      bytesOut: this.#bytesOut,
      started: this.#started,
      upstream: this.#lease.servedBy,
    });
  }
}
