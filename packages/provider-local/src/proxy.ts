/**
 * The forward proxy each local instance runs: HTTP forward proxying of
 * absolute-URI requests and CONNECT tunnels, for allowed sources only, with
 * an access log, bounded resources and a graceful shutdown. Built on
 * `node:http` and `node:net` alone.
 *
 * @module
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream';
import { sourceList } from './cidr.js';

/** What the proxy program reads from its config file (the instance's state file). */
export interface ForwardProxyOptions {
  /** The instance name, answered in the `x-proxy-op-instance` header of `/healthz`. */
  readonly name: string;
  /** The address to listen on (`127.0.0.N`). */
  readonly address: string;
  /** The TCP port to listen on; 0 picks a free one. */
  readonly port: number;
  /** CIDRs whose clients may use the proxy; everyone else gets 403. */
  readonly allowedSources: readonly string[];
  /** Where to append the access log (JSON lines); none when omitted. */
  readonly accessLog?: string | undefined;
  /** Resource bounds; each has a default. */
  readonly limits?: Partial<ProxyLimits> | undefined;
}

/** The proxy's resource bounds. */
export interface ProxyLimits {
  /** Client connections at once; more are refused by closing them (default 1024). */
  readonly maxConnections: number;
  /** Largest request head in bytes; larger gets 431 (default 16384). */
  readonly maxHeaderBytes: number;
  /** Time allowed to send a request head, in ms; slower gets 408 (default 10000). */
  readonly headersTimeoutMs: number;
  /** Idle time after which a connection or tunnel is closed, in ms (default 60000). */
  readonly idleTimeoutMs: number;
  /** Time allowed to connect upstream, in ms; slower gets 504 (default 10000). */
  readonly connectTimeoutMs: number;
  /** Time in-flight requests and tunnels get on shutdown before they are cut, in ms (default 10000). */
  readonly shutdownGraceMs: number;
}

/** The default {@link ProxyLimits}. */
export const DEFAULT_LIMITS: ProxyLimits = {
  maxConnections: 1024,
  maxHeaderBytes: 16_384,
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
  shutdownGraceMs: 10_000,
};

/** A running forward proxy. */
export interface ForwardProxy {
  /** The address and port it listens on. */
  readonly address: { readonly address: string; readonly port: number };
  /** Client connections open now (HTTP and tunnels). */
  connections(): number;
  /**
   * Stops accepting, lets in-flight requests and tunnels finish for up to
   * `graceMs` (default the limit), cuts what is left, closes the access log.
   */
  close(graceMs?: number): Promise<void>;
}

/** One access-log line. */
export interface AccessLogEntry {
  readonly time: string;
  readonly client: string;
  readonly method: string;
  readonly target: string;
  readonly status: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly durationMs: number;
}

const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Largest access-log backlog kept in memory; lines beyond it are dropped and counted. */
const LOG_BACKLOG_BYTES = 1 << 20;

/** Starts a forward proxy; resolves once it listens. */
export async function startForwardProxy(options: ForwardProxyOptions): Promise<ForwardProxy> {
  const limits: ProxyLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const allowed = sourceList(options.allowedSources);
  const log = options.accessLog === undefined ? undefined : openLog(options.accessLog);
  // The log file exists before the proxy answers, so whoever waits for it sees its files.
  await log?.ready;
  const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 32 });
  const sockets = new Set<Socket>();
  const tunnels = new Set<Duplex>();
  let closing = false;

  const server: Server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  });
  server.maxConnections = limits.maxConnections;

  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.setTimeout(limits.idleTimeoutMs, () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
  });

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? '431 Request Header Fields Too Large'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : '400 Bad Request';
    if (socket.writable && !(socket as Socket).destroyed) {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      setTimeout(() => socket.destroy(), 1_000).unref();
    } else {
      socket.destroy();
    }
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const client = req.socket.remoteAddress ?? '';
    let bytesOut = 0;
    const entry = (status: number, bytesIn: number) =>
      log?.write({
        time: new Date().toISOString(),
        client,
        method: req.method ?? '',
        target: targetForLog(req.url ?? ''),
        status,
        bytesIn,
        bytesOut,
        durationMs: Math.round(performance.now() - started),
      });
    const answer = (status: number, text: string, headers: OutgoingHttpHeaders = {}) => {
      req.resume();
      if (!res.headersSent) {
        res.writeHead(status, {
          'content-type': 'text/plain',
          'content-length': Buffer.byteLength(text),
          // A refused or malformed request ends the connection.
          ...(closing || status >= 400 ? { connection: 'close' } : {}),
          ...headers,
        });
      }
      res.end(text);
      entry(status, 0);
    };
    const url = req.url ?? '';
    if (req.httpVersionMajor < 1) {
      answer(400, 'HTTP/0.9 is not supported\n');
      return;
    }
    if (url.startsWith('/')) {
      if (url === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
        // Health probes are not proxy traffic: answered, never logged.
        req.resume();
        res.writeHead(200, {
          'content-type': 'text/plain',
          'content-length': 3,
          'x-proxy-op-instance': options.name,
        });
        res.end('ok\n');
      } else {
        answer(400, 'a proxy request needs an absolute URI (http://host/path)\n');
      }
      return;
    }
    if (!allowed.allows(client)) {
      answer(403, 'this source may not use the proxy\n');
      return;
    }
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      answer(400, 'the request URI is not a URL\n');
      return;
    }
    if (target.protocol !== 'http:' || target.hostname === '') {
      answer(400, 'only http:// URIs are forwarded; use CONNECT for TLS\n');
      return;
    }
    const upstream = httpRequest({
      agent,
      host: stripBrackets(target.hostname),
      port: target.port === '' ? 80 : Number(target.port),
      method: req.method,
      path: `${target.pathname}${target.search}`,
      headers: forwardHeaders(req.headers, req.httpVersion),
      timeout: limits.connectTimeoutMs,
    });
    let bytesIn = 0;
    req.on('data', (chunk: Buffer) => {
      bytesIn += chunk.length;
    });
    upstream.on('timeout', () => upstream.destroy(new TimeoutError()));
    upstream.on('response', (up: IncomingMessage) => {
      upstream.setTimeout(limits.idleTimeoutMs);
      res.writeHead(up.statusCode ?? 502, up.statusMessage, backHeaders(up.headers, closing));
      up.on('data', (chunk: Buffer) => {
        bytesOut += chunk.length;
      });
      pipeline(up, res, (err) => {
        if (err) upstream.destroy();
        entry(up.statusCode ?? 502, bytesIn);
      });
    });
    upstream.on('error', (err) => {
      if (res.headersSent) {
        res.destroy();
        entry(502, bytesIn);
        return;
      }
      answer(
        err instanceof TimeoutError ? 504 : 502,
        `upstream failed: ${(err as NodeJS.ErrnoException).code ?? err.name}\n`,
      );
    });
    pipeline(req, upstream, () => {});
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  });

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const started = performance.now();
    const source = req.socket.remoteAddress ?? '';
    let bytesIn = 0;
    let bytesOut = 0;
    let status = 0;
    const done = () =>
      log?.write({
        time: new Date().toISOString(),
        client: source,
        method: 'CONNECT',
        target: req.url ?? '',
        status,
        bytesIn,
        bytesOut,
        durationMs: Math.round(performance.now() - started),
      });
    const refuse = (code: number, reason: string) => {
      status = code;
      client.on('error', () => {});
      client.end(`HTTP/1.1 ${code} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      setTimeout(() => client.destroy(), 1_000).unref();
      done();
    };
    if (!allowed.allows(source)) return refuse(403, 'Forbidden');
    if (closing) return refuse(503, 'Service Unavailable');
    const hostPort = parseAuthority(req.url ?? '');
    if (hostPort === undefined) return refuse(400, 'Bad Request');
    tunnels.add(client);
    const upstream = connect({
      host: hostPort.host,
      port: hostPort.port,
      allowHalfOpen: true,
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
        refuse(504, 'Gateway Timeout');
        finished = true;
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
    upstream.once('connect', () => {
      status = 200;
      upstream.setTimeout(limits.idleTimeoutMs, finish);
      (client as Socket).setTimeout?.(limits.idleTimeoutMs, finish);
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
      client.once('close', finish);
      upstream.once('close', finish);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.address, port: options.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => {});
  const bound = server.address();
  const address =
    bound !== null && typeof bound === 'object'
      ? { address: bound.address, port: bound.port }
      : { address: options.address, port: options.port };

  let closed: Promise<void> | undefined;
  return {
    address,
    connections: () => sockets.size,
    close(graceMs = limits.shutdownGraceMs) {
      closed ??= (async () => {
        closing = true;
        const stopped = new Promise<void>((r) => server.close(() => r()));
        server.closeIdleConnections();
        const deadline = Date.now() + graceMs;
        while (sockets.size > 0 && Date.now() < deadline) {
          server.closeIdleConnections();
          await new Promise((r) => setTimeout(r, 50));
        }
        for (const s of sockets) s.destroy();
        for (const t of tunnels) t.destroy();
        await stopped;
        agent.destroy();
        await log?.close();
      })();
      return closed;
    },
  };
}

class TimeoutError extends Error {
  override get name(): string {
    return 'TimeoutError';
  }
}

function openLog(path: string): {
  readonly ready: Promise<void>;
  write(e: AccessLogEntry): void;
  close(): Promise<void>;
} {
  const stream: WriteStream = createWriteStream(path, { flags: 'a' });
  const ready = new Promise<void>((resolve) => {
    stream.once('open', () => resolve());
    stream.once('error', () => resolve());
  });
  let dropped = 0;
  stream.on('error', () => {
    dropped++;
  });
  return {
    ready,
    write(e) {
      if (stream.destroyed || stream.writableEnded) return;
      if (stream.writableLength > LOG_BACKLOG_BYTES) {
        dropped++;
        return;
      }
      stream.write(`${JSON.stringify(e)}\n`);
    },
    close: () =>
      new Promise<void>((r) => {
        if (dropped > 0 && !stream.destroyed) {
          stream.write(`${JSON.stringify({ time: new Date().toISOString(), dropped })}\n`);
        }
        stream.end(() => r());
      }),
  };
}

/** `host:port` of a CONNECT request, or undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(authority);
  if (m === null) return undefined;
  const host = m[1] ?? m[2] ?? '';
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined && isIP(host) !== 6) return undefined;
  return { host, port };
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const v = headers.connection;
  const text = Array.isArray(v) ? v.join(',') : (v ?? '');
  return new Set(
    text
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

function forwardHeaders(headers: IncomingHttpHeaders, httpVersion: string): OutgoingHttpHeaders {
  const drop = connectionTokens(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || drop.has(k)) continue;
    out[k] = v;
  }
  const via = `${httpVersion} proxy-op`;
  out.via = typeof headers.via === 'string' ? `${headers.via}, ${via}` : via;
  return out;
}

function backHeaders(headers: IncomingHttpHeaders, closing: boolean): OutgoingHttpHeaders {
  const drop = connectionTokens(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || drop.has(k)) continue;
    out[k] = v;
  }
  if (closing) out.connection = 'close';
  return out;
}

/** The target for the access log: scheme, host and path, never the query (it may hold tokens). */
function targetForLog(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url.slice(0, 200);
  }
}
