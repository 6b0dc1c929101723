/**
 * The forward proxy's resource bounds and their defaults.
 *
 * @module
 */

/** The proxy's resource bounds. */
export interface ProxyLimits {
  /** Client connections at once; more are refused by closing them (default 1024). */
  readonly maxConnections: number;
  /**
   * Client connections at once from one source (an IPv4 address, an IPv6
   * /64); more from it are closed at once, so one source cannot hold every
   * slot (default 256).
   */
  readonly maxConnectionsPerSource: number;
  /** Largest request head in bytes; larger gets 431 (default 16384). */
  readonly maxHeaderBytes: number;
  /** Most field lines in a request head; more gets 431 (default 100). */
  readonly maxHeaderFields: number;
  /** Time allowed to send a request head, in ms; slower gets 408 (default 10000). */
  readonly headersTimeoutMs: number;
  /**
   * Time a request body may go without a byte while the proxy waits for it,
   * in ms; longer gets 408 (default 30000).
   */
  readonly bodyIdleTimeoutMs: number;
  /**
   * Answers held for a client that does not read them; further pipelined
   * requests wait unread until it has (default 16).
   */
  readonly maxPipelinedRequests: number;
  /**
   * Longest `Proxy-Authorization` value, in bytes; a longer one is refused
   * (407) without being checked (default 1024).
   */
  readonly maxAuthorizationBytes: number;
  /**
   * Failed credential checks one source may make in a burst; past them it
   * gets 429 until the bucket refills (default 10).
   */
  readonly maxAuthFailures: number;
  /** Time one failed check takes to be forgiven, in ms: the bucket's refill (default 6000). */
  readonly authFailureRefillMs: number;
  /** Idle time after which a connection or tunnel is closed, in ms (default 60000). */
  readonly idleTimeoutMs: number;
  /** Time allowed to connect upstream, in ms; slower gets 504 (default 10000). */
  readonly connectTimeoutMs: number;
  /** Time in-flight requests and tunnels get on shutdown before they are cut, in ms (default 10000). */
  readonly shutdownGraceMs: number;
  /** Connections open to one origin at once; more requests wait for one (default 256). */
  readonly maxOriginConnections: number;
  /** Idle connections kept open to one origin for the next requests (default 32). */
  readonly maxIdleOriginConnections: number;
  /** Time an idle connection to an origin is kept open, in ms (default 4000). */
  readonly originIdleMs: number;
}

/** The default {@link ProxyLimits}. */
export const DEFAULT_LIMITS: ProxyLimits = {
  maxConnections: 1024,
  maxConnectionsPerSource: 256,
  maxHeaderBytes: 16_384,
  maxHeaderFields: 100,
  headersTimeoutMs: 10_000,
  bodyIdleTimeoutMs: 30_000,
  maxPipelinedRequests: 16,
  maxAuthorizationBytes: 1024,
  maxAuthFailures: 10,
  authFailureRefillMs: 6_000,
  idleTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
  shutdownGraceMs: 10_000,
  maxOriginConnections: 256,
  maxIdleOriginConnections: 32,
  originIdleMs: 4_000,
};
