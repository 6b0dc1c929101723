/**
 * The forward proxy each local instance runs: HTTP forward proxying of
 * absolute-URI requests and CONNECT tunnels, for allowed sources only, with
 * an access log, bounded resources and a graceful shutdown. Built on
 * `node:net` alone: heads are read and written by {@link http1}, bodies
 * pass through as bytes, and connections to origins are kept open between
 * requests ({@link upstream}).
 *
 * @module
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type AccessLog, openAccessLog } from './access-log.js';
import { sourceList } from './cidr.js';
import { ClientConn, type ProxyContext } from './connection.js';
import { DEFAULT_LIMITS, type ProxyLimits } from './limits.js';
import { UpstreamPool } from './upstream.js';

export type { AccessLogEntry } from './access-log.js';
export { parseAuthority } from './http1.js';
export { DEFAULT_LIMITS, type ProxyLimits } from './limits.js';

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

/** A running forward proxy. */
export interface ForwardProxy {
  /** The address and port it listens on. */
  readonly address: { readonly address: string; readonly port: number };
  /** Client connections open now (HTTP and tunnels). */
  connections(): number;
  /** Connections open to origins now, idle ones included. */
  originConnections(): number;
  /**
   * Stops accepting, lets in-flight requests and tunnels finish for up to
   * `graceMs` (default the limit), cuts what is left, closes the access log.
   */
  close(graceMs?: number): Promise<void>;
}

/** Starts a forward proxy; resolves once it listens. */
export async function startForwardProxy(options: ForwardProxyOptions): Promise<ForwardProxy> {
  const limits: ProxyLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const allowed = sourceList(options.allowedSources);
  const log: AccessLog | undefined =
    options.accessLog === undefined ? undefined : openAccessLog(options.accessLog);
  // The log file exists before the proxy answers, so whoever waits for it sees its files.
  await log?.ready;
  const ctx: ProxyContext = {
    name: options.name,
    limits,
    allowed,
    log,
    pool: new UpstreamPool(limits),
    conns: new Set<ClientConn>(),
    tunnels: new Set<Duplex>(),
    closing: false,
  };

  // allowHalfOpen: a client's half-close travels through a tunnel, and a request sent
  // before a half-close still gets its answer.
  const server: Server = createServer({ allowHalfOpen: true, noDelay: true });
  server.maxConnections = limits.maxConnections;
  server.on('connection', (socket: Socket) => {
    new ClientConn(ctx, socket);
  });
  const sweeper = setInterval(
    () => {
      const now = performance.now();
      for (const c of ctx.conns) c.sweep(now);
      ctx.pool.sweep(now);
    },
    Math.min(1_000, limits.headersTimeoutMs),
  );
  sweeper.unref();

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

  const closeIdle = () => {
    for (const c of ctx.conns) if (c.idle) c.socket.destroy();
  };
  let closed: Promise<void> | undefined;
  return {
    address,
    connections: () => ctx.conns.size,
    originConnections: () => ctx.pool.size,
    close(graceMs = limits.shutdownGraceMs) {
      closed ??= (async () => {
        ctx.closing = true;
        const stopped = new Promise<void>((r) => server.close(() => r()));
        closeIdle();
        const deadline = Date.now() + graceMs;
        while (ctx.conns.size > 0 && Date.now() < deadline) {
          closeIdle();
          await new Promise((r) => setTimeout(r, 50));
        }
        for (const c of ctx.conns) c.socket.destroy();
        for (const t of ctx.tunnels) t.destroy();
        await stopped;
        clearInterval(sweeper);
        ctx.pool.close();
        await log?.close();
      })();
      return closed;
    },
  };
}
