/**
 * The forward proxy: HTTP forward proxying of
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
import type { EgressPolicy } from '@proxy-op/egress';
import { type AccessLog, openAccessLog } from './access-log.js';
import { ProxyAuth, type ProxyAuthOptions } from './auth.js';
import { now as clock } from './clock.js';
import { ClientConn } from './connection.js';
import type { ProxyContext, TrackedConnection } from './context.js';
import { Destinations } from './destination.js';
import { type EgressAddresses, egressAddressSet } from './egress-addresses.js';
import { DEFAULT_LIMITS, type ProxyLimits } from './limits.js';
import { egressAddressPicker, outgoingAddressFor } from './outgoing.js';
import { type ParentOptions, type ParentProxy, ParentSet, type ParentStats } from './parents.js';
import { sourceKey, sourceList } from './sources.js';
import { UpstreamPool } from './upstream.js';

/**
 * The proxy's `egress` option: the destination policy (`@proxy-op/egress`),
 * and the addresses its connections leave from.
 */
export interface ForwardProxyEgress extends EgressPolicy {
  /**
   * The source addresses of connections to origins (and, on a gateway, to
   * its parents): an IPv6 prefix of /48 to /128 routed to the host
   * (`"2001:db8:1::/64"`), or a list of addresses on the host, IPv4 and
   * IPv6, which may hold one IPv6 prefix in place of IPv6 addresses
   * (`["2001:db8:1::/64", "192.0.2.10"]`). Each connection leaves from one
   * of them of the family of the address it dials: every connection of one
   * session from the same one (a hash of the session id, keyed for the
   * life of the process), a connection without a session from one at
   * random. A destination with no address of a family the set has is
   * dialled from the source the system picks. Cannot be used with
   * `outgoingAddress`; off when omitted.
   */
  readonly addresses?: EgressAddresses | undefined;
}

/** What a forward proxy is started with (the proxy program reads it from its config file). */
export interface ForwardProxyOptions {
  /** The instance name, answered in the `x-proxy-op-instance` header of `/healthz`. */
  readonly name: string;
  /** The address to listen on (such as `127.0.0.N`). */
  readonly address: string;
  /** The TCP port to listen on; 0 picks a free one. */
  readonly port: number;
  /**
   * CIDRs whose clients may use the proxy. A connection from anywhere else
   * is closed as it is accepted, before a byte of it is read.
   */
  readonly allowedSources: readonly string[];
  /**
   * CIDRs whose clients may ask `GET /healthz` and nothing else (a
   * supervisor's health probe from outside `allowedSources`); other
   * requests from them get 403. None when omitted.
   */
  readonly healthSources?: readonly string[] | undefined;
  /**
   * Where the proxy may connect to on its clients' behalf (`@proxy-op/egress`):
   * `allow` and `deny` entries and the ports of `CONNECT` and plain HTTP,
   * applied to the address actually dialled, after resolution. Its safe
   * defaults when omitted: no loopback, link-local, metadata, private,
   * multicast or broadcast destination, none of the host's own addresses,
   * never the proxy itself; `CONNECT` to 443 only, plain HTTP to 80, 443
   * and 1025 to 65535. A refused request gets `403` naming the rule.
   * `egress.addresses` names the addresses connections leave from.
   */
  readonly egress?: ForwardProxyEgress | undefined;
  /**
   * Basic proxy authentication: when set, a client from an allowed source
   * must also send a user and password the password file holds, or it
   * gets 407 (a source outside `allowedSources` still gets 403 first).
   */
  readonly auth?: ProxyAuthOptions | undefined;
  /**
   * The admin credential of a gateway's ban endpoint (`POST /bans` and
   * `GET /bans`), checked from `Authorization: Basic`; without it the
   * endpoint is off.
   */
  readonly admin?: ProxyAuthOptions | undefined;
  /** Where to append the access log (JSON lines); none when omitted. */
  readonly accessLog?: string | undefined;
  /** Resource bounds; each has a default. */
  readonly limits?: Partial<ProxyLimits> | undefined;
  /**
   * The source address of connections to origins. A loopback address is
   * used for loopback destinations only (it can reach nothing else); for
   * others, and when unset, the system picks it.
   */
  readonly outgoingAddress?: string | undefined;
  /**
   * Parent proxies: when set, every request and tunnel goes through one of
   * them (with its credential) instead of to the origin, and the answer
   * names it in `X-Proxy-Op-Upstream`: the proxy is a gateway in front of
   * them. `GET /metrics` then answers their metrics to allowed sources.
   */
  readonly parents?: ParentOptions | undefined;
  /**
   * SOCKS5 on the same port (default true): a connection whose first byte
   * is 5 speaks SOCKS5 (RFC 1928 `CONNECT`, with RFC 1929 user name and
   * password against the same password file), under the same sources,
   * destination policy (its `CONNECT` ports), parents and access log as
   * HTTP `CONNECT`. `false`: such a connection is read as HTTP (and refused).
   */
  readonly socks5?: boolean | undefined;
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
   * Replaces the parents: those that stay (same name and address) keep
   * their counters and sessions and take a new credential for the next
   * requests, those that leave take nothing new and drain for `drainMs`. Throws a `TypeError` for a bad
   * entry, or when the proxy was started without `parents`.
   */
  setParents(upstreams: readonly ParentProxy[]): void;
  /** What each parent has carried; empty without parents. */
  parentStats(): ParentStats[];
  /**
   * Stops accepting, lets in-flight requests and tunnels finish for up to
   * `graceMs` (default the limit), cuts what is left, closes the access log.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * Says what an operator should know (a password file that went missing, or
 * skipped lines), as a process warning with the code
 * `PROXY_OP_PASSWORD_FILE`: paths and line numbers, never a credential.
 */
function warn(message: string): void {
  process.emitWarning(message, { code: 'PROXY_OP_PASSWORD_FILE' });
}

/**
 * Starts a forward proxy; resolves once it listens. Throws a `TypeError`
 * for a bad option, and an `Error` naming the password file when `auth`
 * names one that cannot be read.
 */
export async function startForwardProxy(options: ForwardProxyOptions): Promise<ForwardProxy> {
  const limits: ProxyLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const allowed = sourceList(options.allowedSources);
  const healthOnly = sourceList(options.healthSources ?? [], 'healthSources');
  const { addresses, ...policy } = options.egress ?? {};
  const egressAddresses = egressAddressSet(addresses, options.outgoingAddress);
  const destinations = new Destinations(options.egress === undefined ? undefined : policy);
  const auth = options.auth === undefined ? undefined : new ProxyAuth(options.auth, warn, limits);
  const admin =
    options.admin === undefined ? undefined : new ProxyAuth(options.admin, warn, limits);
  const log: AccessLog | undefined =
    options.accessLog === undefined ? undefined : openAccessLog(options.accessLog);
  // The log file exists before the proxy answers, so whoever waits for it sees its files.
  await log?.ready;
  const outgoing =
    egressAddresses === undefined
      ? outgoingAddressFor(options.outgoingAddress)
      : egressAddressPicker(egressAddresses);
  const ctx: ProxyContext = {
    name: options.name,
    limits,
    allowed,
    healthOnly,
    destinations,
    auth,
    admin,
    log,
    outgoing,
    // A gateway dials its parents only: its pool has no destinations to resolve and check.
    pool: new UpstreamPool(
      limits,
      outgoing,
      options.parents === undefined ? destinations : undefined,
    ),
    parents: options.parents === undefined ? undefined : new ParentSet(options.parents),
    conns: new Set<TrackedConnection>(),
    socks5: options.socks5 ?? true,
    tunnels: new Set<Duplex>(),
    closing: false,
  };

  // allowHalfOpen: a client's half-close travels through a tunnel, and a request sent
  // before a half-close still gets its answer.
  const server: Server = createServer({ allowHalfOpen: true, noDelay: true });
  server.maxConnections = limits.maxConnections;
  // Past the shutdown grace, a connection still accepted (it was in the backlog) is cut at
  // once: it would otherwise hold the close until its client gives up.
  let cutting = false;
  /** Connections open now per source (see `sourceKey`). */
  const perSource = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    if (cutting) {
      socket.destroy();
      return;
    }
    // The source is judged before a byte is read: one that may not use the proxy is closed at
    // once, and so is one that holds its share of the connections already.
    const address = socket.remoteAddress;
    const full = allowed.allows(address);
    if (!full && !healthOnly.allows(address)) {
      socket.destroy();
      return;
    }
    const key = sourceKey(address);
    const open = perSource.get(key) ?? 0;
    if (open >= limits.maxConnectionsPerSource) {
      socket.destroy();
      return;
    }
    perSource.set(key, open + 1);
    socket.once('close', () => {
      const n = (perSource.get(key) ?? 1) - 1;
      if (n === 0) perSource.delete(key);
      else perSource.set(key, n);
    });
    new ClientConn(ctx, socket, full);
  });
  // The clocks are read after the poll phase has taken in what clients sent meanwhile: after
  // a pause of the process (a loaded machine), bytes already waiting in the kernel are not
  // counted as a client that is slow to send.
  const sweep = () => {
    const now = clock();
    for (const c of ctx.conns) c.sweep(now);
    ctx.pool.sweep(now);
  };
  const sweeper = setInterval(
    () => {
      setImmediate(sweep);
    },
    Math.min(1_000, limits.headersTimeoutMs, limits.bodyIdleTimeoutMs),
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
  // A request to the proxy itself is refused before it is dialled, whatever the policy says.
  destinations.listening([address]);

  const closeIdle = () => {
    for (const c of ctx.conns) if (c.idle) c.socket.destroy();
  };
  let closed: Promise<void> | undefined;
  return {
    address,
    connections: () => ctx.conns.size,
    originConnections: () => ctx.pool.size,
    setParents(upstreams) {
      if (ctx.parents === undefined) {
        throw new TypeError('this proxy was started without parents; give options.parents');
      }
      ctx.parents.set(upstreams);
    },
    parentStats: () => ctx.parents?.stats() ?? [],
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
        cutting = true;
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
