/**
 * The Squid configuration of a proxy: locked down to the allowed sources and
 * one port, destinations held to a destination policy (`@proxy-op/egress`:
 * by default no loopback, link-local, metadata, private, multicast or
 * broadcast address, CONNECT to 443 only, plain HTTP to 80, 443 and
 * 1025-65535), no cache manager, no cache, logs without query strings, and,
 * when asked, Basic authentication as well as the sources. Deterministic:
 * the same settings give the same bytes.
 *
 * @module
 */
import { cidrProblem } from '@proxy-op/contract';
import type { EgressPolicy } from '@proxy-op/egress';
import { type SquidAuth, squidAuthLines } from './auth.js';
import { squidSourceList, withPrefix } from './cidr.js';
import { squidEgressLines } from './egress.js';

/** Where a Squid writes, as paths on the machine or in the container it runs in. */
export interface SquidPaths {
  /** The access log (written as `stdio:<path>`). */
  readonly accessLog: string;
  /** Squid's own diagnostics. */
  readonly cacheLog: string;
  /** The PID file; `none` (no file) when unset. */
  readonly pidFile?: string | undefined;
  /** Where a crashing Squid leaves its core; `none` when unset. */
  readonly coredumpDir?: string | undefined;
}

/**
 * A Squid in a container: both logs to the container's output, nothing
 * written to its filesystem (no PID file, no core dumps).
 */
export const CONTAINER_PATHS: SquidPaths = Object.freeze({
  accessLog: '/dev/stdout',
  cacheLog: '/dev/stderr',
});

/**
 * The Squid service of a Debian or Ubuntu machine (the `squid` package and
 * its systemd unit): logs under `/var/log/squid`, the PID file where the
 * unit looks for it.
 */
export const SERVICE_PATHS: SquidPaths = Object.freeze({
  accessLog: '/var/log/squid/access.log',
  cacheLog: '/var/log/squid/cache.log',
  pidFile: '/run/squid.pid',
  coredumpDir: '/var/spool/squid',
});

/** What a configuration is made from. */
export interface SquidSettings {
  /** The port Squid listens on. */
  readonly port: number;
  /**
   * The only sources whose clients may use the proxy: CIDRs or bare
   * addresses, at least one. `0.0.0.0/0` and `::/0` are written the way
   * Squid accepts them, and a network another one covers is left out.
   */
  readonly allowedSources: readonly string[];
  /**
   * The ports CONNECT may reach; `[443]` when unset. The older spelling of
   * `egress.connectPorts`: give one or the other.
   */
  readonly connectPorts?: readonly number[] | undefined;
  /**
   * Where the proxy may connect to (`@proxy-op/egress`): `allow` and
   * `deny` entries and the ports of CONNECT and plain HTTP. Its defaults
   * when unset, or for what it leaves out.
   */
  readonly egress?: EgressPolicy | undefined;
  /** Listen on this address only; all addresses when unset. */
  readonly listenAddress?: string | undefined;
  /** Where Squid writes; {@link CONTAINER_PATHS} when unset. */
  readonly paths?: SquidPaths | undefined;
  /**
   * Basic authentication: a client from an allowed source must also send a
   * user and password the password file holds (407 otherwise); a client
   * from any other source still gets 403. None when unset.
   */
  readonly auth?: SquidAuth | undefined;
}

const isPort = (p: number) => Number.isInteger(p) && p >= 1 && p <= 65535;

/**
 * Renders the configuration. Throws a `RangeError` naming the setting for
 * anything that would make an open or broken proxy: no source, a source
 * that is not an address or CIDR, a port outside 1 to 65535, an `auth`
 * whose realm, paths or numbers would break the configuration, an
 * `egress` policy with a bad entry (each problem named by its field path).
 */
export function renderSquidConfig(s: SquidSettings): string {
  if (!isPort(s.port)) {
    throw new RangeError(`port: ${String(s.port)} is not a TCP port (1 to 65535)`);
  }
  if (s.allowedSources.length === 0) {
    throw new RangeError('allowedSources: empty; a proxy without a source would serve nobody');
  }
  for (const cidr of s.allowedSources) {
    const problem = cidrProblem(cidr);
    if (problem !== undefined) throw new RangeError(`allowedSources: ${problem}`);
  }
  if (s.connectPorts !== undefined) {
    if (s.egress?.connectPorts !== undefined) {
      throw new RangeError(
        'connectPorts: egress.connectPorts is given too; give the CONNECT ports in egress.connectPorts only',
      );
    }
    if (s.connectPorts.length === 0) {
      throw new RangeError('connectPorts: empty; leave it unset for 443');
    }
    for (const p of s.connectPorts) {
      if (!isPort(p)) {
        throw new RangeError(`connectPorts: ${String(p)} is not a TCP port (1 to 65535)`);
      }
    }
  }
  const egress = squidEgressLines(s.egress, s.connectPorts);
  const paths = s.paths ?? CONTAINER_PATHS;
  const listen = s.listenAddress === undefined ? `${s.port}` : `${s.listenAddress}:${s.port}`;
  const sources = squidSourceList(s.allowedSources.map(withPrefix));
  const auth = s.auth === undefined ? undefined : squidAuthLines(s.auth);
  const lines = [
    auth === undefined
      ? '# Generated by proxy-op. Only the allowed sources may use this proxy.'
      : '# Generated by proxy-op. Only the allowed sources, with a user and password, may use this proxy.',
    `http_port ${listen}`,
    ...(auth?.params ?? []),
    ...sources.map((cidr) => `acl proxy_op_allowed src ${cidr}`),
    ...egress.acls,
    'acl CONNECT method CONNECT',
    ...(auth?.acls ?? []),
    'http_access deny manager',
    // The source first (403), then the credential (407), then the destination (403).
    'http_access deny !proxy_op_allowed',
    ...(auth === undefined ? [] : [auth.challenge]),
    ...egress.access,
    auth?.allow ?? 'http_access allow proxy_op_allowed',
    'http_access deny all',
    'cache deny all',
    'cache_mem 0 MB',
    'strip_query_terms on',
    `access_log stdio:${paths.accessLog}`,
    `cache_log ${paths.cacheLog}`,
    `pid_filename ${paths.pidFile ?? 'none'}`,
    'netdb_filename none',
    `coredump_dir ${paths.coredumpDir ?? 'none'}`,
    'pinger_enable off',
    'shutdown_lifetime 3 seconds',
  ];
  return `${lines.join('\n')}\n`;
}
