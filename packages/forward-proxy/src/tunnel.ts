/**
 * CONNECT tunnels: a TCP connection to the named host and port, bytes
 * piped both ways with backpressure, half-closes passed on, idle ones
 * closed, and one access-log line when the tunnel ends.
 *
 * @module
 */
import { connect, type Socket } from 'node:net';
import type { ProxyContext } from './context.js';
import { ReadBuffer } from './read-buffers.js';
import { parseAuthority } from './target.js';

/** Who asked for a tunnel, for its refusal and its access-log line. */
export interface TunnelClient {
  /** The client's source is allowed. */
  readonly allowed: boolean;
  /** The client's address. */
  readonly source: string;
  /** The user it authenticated as, when the proxy requires it. */
  readonly user: string | undefined;
  /** When the CONNECT head was read (`performance.now()`). */
  readonly started: number;
}

/** Opens a tunnel for `client`, whose CONNECT head has been read; `head` is what followed it. */
export function openTunnel(
  ctx: ProxyContext,
  client: Socket,
  authority: string,
  head: Buffer,
  who: TunnelClient,
): void {
  const { allowed, source, user, started } = who;
  const { limits, tunnels } = ctx;
  // Nothing is read until the tunnel pipes it (pipe() resumes the socket).
  client.pause();
  let bytesIn = 0;
  let bytesOut = 0;
  let status = 0;
  const done = () =>
    ctx.log?.write({
      time: new Date().toISOString(),
      client: source,
      user,
      method: 'CONNECT',
      target: authority,
      status,
      bytesIn,
      bytesOut,
      durationMs: Math.round(performance.now() - started),
    });
  const refuse = (code: number, reason: string) => {
    status = code;
    client.end(`HTTP/1.1 ${code} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    setTimeout(() => client.destroy(), 1_000).unref();
    done();
  };
  if (!allowed) {
    refuse(403, 'Forbidden');
    return;
  }
  if (ctx.closing) {
    refuse(503, 'Service Unavailable');
    return;
  }
  const hostPort = parseAuthority(authority);
  if (hostPort === undefined) {
    refuse(400, 'Bad Request');
    return;
  }
  tunnels.add(client);
  const localAddress = ctx.outgoing(hostPort.host);
  // Origin to client, the way most bytes go: each read lands in a reused buffer and is written
  // on at once; a client that cannot take more stops the reading until it drains.
  const reads = new ReadBuffer();
  const upstream = connect({
    host: hostPort.host,
    port: hostPort.port,
    ...(localAddress === undefined ? {} : { localAddress }),
    allowHalfOpen: true,
    noDelay: true,
    timeout: limits.connectTimeoutMs,
    onread: {
      buffer: reads.next,
      callback: (n: number, buf: Uint8Array): boolean => {
        reads.got(n);
        const more = client.write(n === buf.length ? buf : buf.subarray(0, n));
        reads.lend(client);
        return more;
      },
    },
  });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    tunnels.delete(client);
    bytesIn = upstream.bytesWritten;
    bytesOut = upstream.bytesRead;
    client.destroy();
    upstream.destroy();
    reads.release();
    done();
  };
  upstream.once('timeout', () => {
    if (status === 0) {
      upstream.destroy();
      reads.release();
      tunnels.delete(client);
      finished = true;
      refuse(504, 'Gateway Timeout');
    }
  });
  upstream.once('error', () => {
    if (status === 0) {
      reads.release();
      tunnels.delete(client);
      finished = true;
      refuse(502, 'Bad Gateway');
    } else finish();
  });
  client.on('error', finish);
  client.once('close', finish);
  upstream.once('connect', () => {
    if (finished) return;
    status = 200;
    upstream.setTimeout(limits.idleTimeoutMs, finish);
    client.setTimeout(limits.idleTimeoutMs, finish);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    // Client to origin: the client socket's own reads, with backpressure both ways.
    client.on('data', (c: Buffer) => {
      if (!upstream.write(c)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    client.on('drain', () => upstream.resume());
    // Each side's end is passed on as a half-close; the tunnel ends when both have.
    let ends = 0;
    const oneSideDone = () => {
      if (++ends === 2) finish();
    };
    client.once('end', () => {
      upstream.end();
      oneSideDone();
    });
    upstream.once('end', () => {
      client.end();
      oneSideDone();
    });
    upstream.once('close', finish);
    client.resume();
  });
}
