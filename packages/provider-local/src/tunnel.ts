/**
 * CONNECT tunnels: a TCP connection to the named host and port, bytes
 * piped both ways with backpressure, half-closes passed on, idle ones
 * closed, and one access-log line when the tunnel ends.
 *
 * @module
 */
import { connect, type Socket } from 'node:net';
import type { ProxyContext } from './connection.js';
import { parseAuthority } from './http1.js';

/** Opens a tunnel for `client`, whose CONNECT head has been read; `head` is what followed it. */
export function openTunnel(
  ctx: ProxyContext,
  client: Socket,
  authority: string,
  head: Buffer,
  allowed: boolean,
  source: string,
  started: number,
): void {
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
  const upstream = connect({
    host: hostPort.host,
    port: hostPort.port,
    allowHalfOpen: true,
    noDelay: true,
    timeout: limits.connectTimeoutMs,
  });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    tunnels.delete(client);
    client.destroy();
    upstream.destroy();
    done();
  };
  upstream.once('timeout', () => {
    if (status === 0) {
      upstream.destroy();
      tunnels.delete(client);
      finished = true;
      refuse(504, 'Gateway Timeout');
    }
  });
  upstream.once('error', () => {
    if (status === 0) {
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
    if (head.length > 0) {
      bytesIn += head.length;
      upstream.write(head);
    }
    client.on('data', (c: Buffer) => {
      bytesIn += c.length;
    });
    upstream.on('data', (c: Buffer) => {
      bytesOut += c.length;
    });
    // pipe() keeps backpressure and passes each side's end on as a half-close.
    client.pipe(upstream);
    upstream.pipe(client);
    let ends = 0;
    const oneSideDone = () => {
      if (++ends === 2) finish();
    };
    client.once('end', oneSideDone);
    upstream.once('end', oneSideDone);
    upstream.once('close', finish);
  });
}
