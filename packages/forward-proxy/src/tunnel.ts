/**
 * CONNECT tunnels: a TCP connection to the named host and port (or, when
 * the proxy has parents, a CONNECT through one of them), bytes piped both
 * ways with backpressure, half-closes passed on, idle ones closed, and one
 * access-log line when the tunnel ends.
 *
 * Through a parent, the client's `200` is sent only once the parent's own
 * `200` came, and names the parent (`X-Proxy-Op-Upstream`). Until then
 * nothing has reached the client, so a parent that cannot be reached, or
 * answers the CONNECT with a 5xx, is tried once more on another one; a
 * parent that refuses the gateway's credential (`407`) or the tunnel
 * (`403`) makes a `502` that names it.
 *
 * @module
 */
import type { Socket } from 'node:net';
import { logEnded } from './access-log.js';
import { now as clock } from './clock.js';
import type { ProxyContext } from './context.js';
import { refusalOf, refusalText } from './destination.js';
import { HeadError, parseResponseHead } from './http1.js';
import { connectFrom } from './outgoing.js';
import { ParentLease } from './parent-lease.js';
import type { Parent } from './parents.js';
import { ReadBuffer } from './read-buffers.js';
import { HeadReader } from './reader.js';
import { REASONS } from './reasons.js';
import { NONE_CAME, RETRY_AFTER } from './steering.js';
import { parseAuthority } from './target.js';
import type { UserParams } from './user-params.js';

/** Who asked for a tunnel, for its refusal and its access-log line. */
export interface TunnelClient {
  /** The client's source is allowed. */
  readonly allowed: boolean;
  /** The client's address. */
  readonly source: string;
  /** The user it authenticated as, when the proxy requires it. */
  readonly user: string | undefined;
  /** When the CONNECT head was read (`clock()`). */
  readonly started: number;
  /**
   * The session the parents' policy gives the tunnel; its user name's
   * session id, when it gives one, goes first.
   */
  readonly session?: string | undefined;
  /** The parameters of its user name. */
  readonly params?: UserParams | undefined;
  /** How the client is answered: HTTP (the default), or another protocol's replies (SOCKS5). */
  readonly replies?: TunnelReplies | undefined;
}

/** The answers of a protocol other than HTTP that carries a tunnel. */
export interface TunnelReplies {
  /** The refusal for what HTTP would answer with `status`; `cause` the socket error behind it. */
  refusal(status: number, cause: string | undefined): Buffer;
  /** The answer that the tunnel is open. */
  opened(): Buffer;
}

/** Largest answer head a parent may send to CONNECT. */
const MAX_PARENT_HEAD = 16 * 1024;

/** Opens a tunnel for `client`, whose CONNECT head has been read; `head` is what followed it. */
export function openTunnel(
  ctx: ProxyContext,
  client: Socket,
  authority: string,
  head: Buffer,
  who: TunnelClient,
): void {
  const { allowed, source, user, started } = who;
  const { limits, tunnels, parents } = ctx;
  // Nothing is read until the tunnel pipes it (pipe() resumes the socket).
  client.pause();
  let bytesIn = 0;
  let bytesOut = 0;
  let status = 0;
  // One tunnel goes through one parent: no connection pin.
  const lease = new ParentLease(parents, {
    user,
    params: who.params,
    fallback: who.session,
    pin: undefined,
    cut: () => finish(),
  });
  const done = () =>
    logEnded(ctx.log, {
      client: source,
      user,
      method: 'CONNECT',
      target: authority,
      status,
      bytesIn,
      bytesOut,
      started,
      upstream: lease.servedBy,
    });
  const leave = () => lease.leave(bytesIn, bytesOut);
  const refuse = (code: number, text = '', cause?: string) => {
    status = code;
    const body = text === '' ? '' : `${text}\n`;
    client.end(
      who.replies?.refusal(code, cause) ??
        `HTTP/1.1 ${code} ${REASONS[code] ?? ''}\r\n${lease.fields()}${code === 503 ? RETRY_AFTER : ''}Connection: close\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    setTimeout(() => client.destroy(), 1_000).unref();
    tunnels.delete(client);
    leave();
    done();
  };
  if (!allowed) {
    refuse(403);
    return;
  }
  if (ctx.closing) {
    refuse(503);
    return;
  }
  if (lease.refusal !== undefined) {
    refuse(502, lease.refusal);
    return;
  }
  const asked = parseAuthority(authority);
  if (asked === undefined) {
    refuse(400);
    return;
  }
  // The host as the request names it; the addresses a name resolves to are checked as it is
  // dialled (a gateway's parents check those).
  const refused = ctx.destinations.check(asked.host, asked.port, 'connect');
  if (refused !== undefined) {
    refuse(403, refusalText(refused).trimEnd());
    return;
  }
  if (lease.steer !== undefined) lease.steer.host = asked.host;
  const hostPort = { host: ctx.destinations.dialHost(asked.host), port: asked.port };
  const lookup =
    parents === undefined ? ctx.destinations.lookupFor(asked.port, 'connect') : undefined;
  tunnels.add(client);

  let upstream: Socket;
  let reads: ReadBuffer;
  let finished = false;
  function finish(): void {
    if (finished) return;
    finished = true;
    tunnels.delete(client);
    bytesIn = upstream.bytesWritten;
    bytesOut = upstream.bytesRead;
    client.destroy();
    upstream.destroy();
    reads.release();
    leave();
    done();
  }

  /** One attempt: to the target, or to a parent (the first, or the one after a failed one). */
  const dial = (): void => {
    if (parents !== undefined) {
      const choice = lease.choose(parents, 'tunnel');
      if (choice.kind === 'hold') {
        // The pool is at zero: the tunnel waits for a parent to come.
        void parents.waitForParent().then((came) => {
          if (finished || client.destroyed) return;
          if (came) dial();
          else {
            finished = true;
            refuse(503, NONE_CAME);
          }
        });
        return;
      }
      if (choice.kind === 'none') {
        finished = true;
        refuse(502, choice.text);
        return;
      }
    }
    const via = lease.parent;
    const to = via ?? hostPort;
    const dialed = clock();
    // The parent's answer to our CONNECT, until it is whole.
    let answer: Buffer | undefined;
    const heads = new HeadReader(MAX_PARENT_HEAD);
    let open = via === undefined;
    /** This attempt was given up (for another one, or for an answer of our own). */
    let over = false;
    const r = new ReadBuffer();
    reads = r;
    // Origin to client, the way most bytes go: each read lands in a reused buffer and is written
    // on at once; a client that cannot take more stops the reading until it drains.
    const sock = connectFrom(ctx.outgoing, who.params?.session ?? who.session, {
      host: to.host,
      port: to.port,
      ...(via === undefined && lookup !== undefined ? { lookup } : {}),
      allowHalfOpen: true,
      noDelay: true,
      timeout: limits.connectTimeoutMs,
      onread: {
        buffer: r.next,
        callback: (n: number, buf: Uint8Array): boolean => {
          r.got(n);
          const chunk = n === buf.length ? buf : buf.subarray(0, n);
          if (open) {
            const more = client.write(chunk);
            r.lend(client);
            return more;
          }
          if (over) return true;
          answer = answer === undefined ? Buffer.from(chunk) : Buffer.concat([answer, chunk]);
          parentAnswered(answer);
          return true;
        },
      },
    });
    upstream = sock;

    /**
     * Tries once more on another parent when nothing reached the client (and
     * nothing of the tunnel reached the parent); true when it did.
     */
    const again = (): boolean => {
      if (via === undefined || lease.tried.size !== 1 || status !== 0) return false;
      if (!lease.hasOther(parents)) return false;
      over = true;
      sock.destroy();
      r.release();
      leave();
      dial();
      return true;
    };
    const parentAnswered = (buf: Buffer): void => {
      const p = via as Parent;
      let code: number;
      let end: number;
      try {
        const span = heads.find(buf);
        if (span === undefined) return;
        end = span.end;
        code = parseResponseHead(buf.toString('latin1', span.start, end - 4), 'CONNECT').status;
      } catch (err) {
        if (!(err instanceof HeadError)) throw err;
        code = 0;
        end = buf.length;
      }
      if (code >= 200 && code < 300) {
        p.succeeded(clock() - dialed);
        open = true;
        established(buf.subarray(end));
        return;
      }
      if (code === 407) {
        parents?.failed(p);
        drop();
        refuse(502, `upstream ${p.name} refused the gateway's credential (407)`);
        return;
      }
      if (code === 403) {
        drop();
        refuse(502, `upstream ${p.name} refused the tunnel (403)`);
        return;
      }
      if ((code === 0 || code >= 500) && again()) return;
      if (code === 0) parents?.failed(p);
      drop();
      refuse(
        502,
        `upstream ${p.name} answered the tunnel with ${code === 0 ? 'a malformed head' : code}`,
      );
    };
    /** Lets go of the attempt's socket before an answer of our own. */
    const drop = () => {
      over = true;
      finished = true;
      sock.destroy();
      r.release();
    };

    sock.once('timeout', () => {
      if (over || status !== 0 || finished) return;
      if (via !== undefined) parents?.failed(via);
      if (again()) return;
      drop();
      refuse(504, via === undefined ? '' : `upstream ${via.name} did not answer in time`);
    });
    sock.once('error', (err: NodeJS.ErrnoException) => {
      if (over) return;
      const rule = refusalOf(err);
      if (rule !== undefined && status === 0 && !finished) {
        drop();
        refuse(403, refusalText(rule).trimEnd());
        return;
      }
      if (status === 0 && !finished) {
        if (via !== undefined) parents?.failed(via);
        if (again()) return;
        drop();
        refuse(
          502,
          via === undefined ? '' : `upstream ${via.name} failed: ${err.code ?? 'error'}`,
          err.code,
        );
      } else finish();
    });
    // A parent that closes before its answer (it was stopping, say): as a failed connection. The
    // socket is half-open, so a FIN alone would leave it waiting for an answer that never comes.
    sock.once('end', () => {
      if (!open) sock.destroy();
    });
    sock.once('close', () => {
      if (over || status !== 0 || finished || via === undefined) return;
      parents?.failed(via);
      if (again()) return;
      drop();
      refuse(502, `upstream ${via.name} closed the connection before it answered`);
    });
    sock.once('connect', () => {
      if (over || finished) return;
      if (via === undefined) {
        established(Buffer.alloc(0));
        return;
      }
      sock.write(
        `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${via.authField}\r\n`,
        'latin1',
      );
    });
    const established = (early: Buffer): void => {
      status = 200;
      sock.setTimeout(limits.idleTimeoutMs, finish);
      client.setTimeout(limits.idleTimeoutMs, finish);
      client.write(
        who.replies?.opened() ?? `HTTP/1.1 200 Connection Established\r\n${lease.fields()}\r\n`,
      );
      if (early.length > 0) client.write(early);
      if (head.length > 0) sock.write(head);
      // Client to origin: the client socket's own reads, with backpressure both ways.
      client.on('data', (c: Buffer) => {
        if (!sock.write(c)) client.pause();
      });
      sock.on('drain', () => client.resume());
      client.on('drain', () => sock.resume());
      // Each side's end is passed on as a half-close; the tunnel ends when both have.
      let ends = 0;
      const oneSideDone = () => {
        if (++ends === 2) finish();
      };
      client.once('end', () => {
        sock.end();
        oneSideDone();
      });
      sock.once('end', () => {
        client.end();
        oneSideDone();
      });
      sock.once('close', finish);
      client.resume();
    };
  };
  client.on('error', () => {
    if (status !== 0) finish();
  });
  client.once('close', () => {
    if (status === 0 && !finished) {
      finished = true;
      upstream.destroy();
      reads.release();
      tunnels.delete(client);
      leave();
      done();
    } else finish();
  });
  dial();
}
