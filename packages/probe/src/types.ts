/**
 * What a probe is given and what it gives back: the proxy, the target, the
 * options, and the result with its steps, latencies and egress IP; with the
 * checks that turn what the caller wrote into URLs (a `TypeError` for what
 * is no proxy or target).
 *
 * @module
 */
import { isIP } from 'node:net';

/** The proxy to probe: `http://host:port`, or its host and port. */
export type ProbeProxy = string | URL | { readonly host: string; readonly port: number };

/** How the TLS inside a CONNECT tunnel to an `https:` target is checked. */
export interface ProbeTls {
  /** Trusted certificates (PEM) instead of Node's own list. */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> | undefined;
  /**
   * The SHA-256 fingerprint the target's certificate must have (`AB:CD:...`
   * or hex without colons): pinned, so neither its issuer nor its names
   * are checked.
   */
  readonly fingerprint256?: string | undefined;
  /** The name to ask for (SNI) and check; default the URL's host (never an IP address). */
  readonly servername?: string | undefined;
  /**
   * False: the certificate is not checked at all (the nonce still is).
   * Default true.
   */
  readonly verify?: boolean | undefined;
}

/**
 * Where the probe goes through the proxy. A URL (string or `URL`) is the
 * same target for both checks.
 */
export interface ProbeTargetSpec {
  /** The URL asked for with an absolute-form `GET` (`http:`; `https:` for a proxy that fetches it itself). */
  readonly get?: string | URL | undefined;
  /** The URL reached through a `CONNECT` tunnel: `https:` puts TLS inside the tunnel, `http:` plain HTTP. */
  readonly connect?: string | URL | undefined;
  /** How the TLS inside the tunnel is checked. */
  readonly tls?: ProbeTls | undefined;
}

/** A probe's target: one URL for both checks, or each check's own. */
export type ProbeTarget = string | URL | ProbeTargetSpec;

/** A Basic credential for the proxy. It is only ever written to the proxy, never into a result. */
export interface ProbeCredentials {
  /** The user name. */
  readonly username: string;
  /** The password, sent only to the proxy. */
  readonly password: string;
}

/** Options of {@link probe}. */
export interface ProbeOptions {
  /** Aborts the probe: its socket is closed and it rejects with a `ProbeAbortedError`. */
  readonly signal?: AbortSignal | undefined;
  /** The whole probe's deadline in milliseconds (default 10000); the step it cuts short fails. */
  readonly timeoutMs?: number | undefined;
  /**
   * Sent as `Proxy-Authorization: Basic ...` on both checks; with it, a third
   * check makes sure that a request without it is refused with 407.
   */
  readonly credentials?: ProbeCredentials | undefined;
  /** The source address of the probe's connections to the proxy. */
  readonly localAddress?: string | undefined;
  /**
   * Also opens a SOCKS5 tunnel (RFC 1928 `CONNECT`, on the proxy's port) to
   * the target's `connect` URL (else its `get` URL) and fetches the nonce
   * through it, the credential given as the SOCKS5 user name and password
   * (RFC 1929). For proxies that speak SOCKS5 beside HTTP; default false.
   */
  readonly socks5?: boolean | undefined;
  /** The most bytes read of one answer, head and body (default 65536). */
  readonly maxAnswerBytes?: number | undefined;
}

/** The probe's defaults. */
export const PROBE_DEFAULTS = Object.freeze({
  /** The whole probe's deadline. */
  timeoutMs: 10_000,
  /** The most bytes read of one answer. */
  maxAnswerBytes: 65_536,
  /** Random bytes in a nonce (written as hex). */
  nonceBytes: 16,
});

/**
 * A check of a probe: the absolute-form GET, the CONNECT tunnel, the SOCKS5
 * tunnel, the refusal without credentials.
 */
export type ProbeCheckName = 'get' | 'connect' | 'socks5' | 'auth';

/**
 * A step of a check: the TCP connection to the proxy, the CONNECT answer
 * (and the TLS inside the tunnel), the answer's status, the nonce in the
 * answer, the 407 without credentials.
 */
export type ProbeStepName = 'connect' | 'tunnel' | 'status' | 'nonce' | 'auth';

/** One step's outcome. */
export interface ProbeStep {
  /** The check the step belongs to. */
  readonly check: ProbeCheckName;
  /** The step. */
  readonly step: ProbeStepName;
  /** It passed. */
  readonly ok: boolean;
  /** How long the step took, in milliseconds. */
  readonly ms: number;
  /** What happened, in words (never a credential). */
  readonly message: string;
  /** The HTTP status the step read, where it read one. */
  readonly status?: number | undefined;
}

/** Latencies of a check, in milliseconds from its start. */
export interface ProbeLatency {
  /** The TCP connection to the proxy was open. */
  readonly connectMs?: number | undefined;
  /** The first byte of the proxy's answer arrived. */
  readonly firstByteMs?: number | undefined;
  /** The check was over. */
  readonly totalMs: number;
}

/** One check's outcome. */
export interface ProbeCheck {
  /** The check. */
  readonly check: ProbeCheckName;
  /** Every step of it ran and passed. */
  readonly ok: boolean;
  /** Its steps, in order. */
  readonly steps: readonly ProbeStep[];
  /** Its latencies. */
  readonly latency: ProbeLatency;
  /** The source address the target saw. */
  readonly egressIP?: string | undefined;
}

/** What a probe found. */
export interface ProbeResult {
  /** Every check ran and every step passed. */
  readonly ok: boolean;
  /** When the probe began. */
  readonly startedAt: Date;
  /** Every step run, in order. */
  readonly steps: readonly ProbeStep[];
  /** Each check run, in order, with its own steps, latencies and egress IP. */
  readonly checks: readonly ProbeCheck[];
  /** The first step that failed. */
  readonly failure?:
    | { readonly check: ProbeCheckName; readonly step: ProbeStepName; readonly message: string }
    | undefined;
  /** The first check's connect and first-byte latencies; `totalMs` is the whole probe's. */
  readonly latency: ProbeLatency;
  /** The source address the target saw (the GET's, else the tunnel's). */
  readonly egressIP?: string | undefined;
}

/** The proxy as a host and port; a `TypeError` for anything else. */
export function proxyAddress(proxy: ProbeProxy): { host: string; port: number } {
  if (typeof proxy === 'object' && !(proxy instanceof URL)) {
    if (typeof proxy.host !== 'string' || proxy.host === '' || !validPort(proxy.port)) {
      throw new TypeError('probe: proxy needs a host and a port from 1 to 65535');
    }
    return { host: proxy.host, port: proxy.port };
  }
  const u = toUrl(proxy, 'proxy');
  if (u.protocol !== 'http:') throw new TypeError(`probe: proxy ${u.href} is not an http: URL`);
  return { host: bare(u.hostname), port: Number(u.port || 80) };
}

/** The two URLs of a target and its TLS checks; a `TypeError` for anything else. */
export function targetUrls(target: ProbeTarget): {
  get: URL | undefined;
  connect: URL | undefined;
  tls: ProbeTls;
} {
  const spec: ProbeTargetSpec =
    typeof target === 'string' || target instanceof URL ? { get: target, connect: target } : target;
  if (spec === null || typeof spec !== 'object') throw new TypeError('probe: target is no URL');
  const get = spec.get === undefined ? undefined : toUrl(spec.get, 'target');
  const connect = spec.connect === undefined ? undefined : toUrl(spec.connect, 'target');
  if (get === undefined && connect === undefined) {
    throw new TypeError('probe: target needs a get or a connect URL');
  }
  for (const u of [get, connect]) {
    if (u !== undefined && u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new TypeError(`probe: target ${u.href} is not an http: or https: URL`);
    }
  }
  return { get, connect, tls: spec.tls ?? {} };
}

/** A host without the brackets of an IPv6 literal. */
export function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** An address as the target reports it, IPv4-mapped IPv6 written as IPv4; undefined when no address. */
export function normalAddress(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.startsWith('::ffff:') && isIP(value.slice(7)) === 4 ? value.slice(7) : value;
  return isIP(v) === 0 ? undefined : v;
}

function validPort(p: unknown): p is number {
  return typeof p === 'number' && Number.isInteger(p) && p >= 1 && p <= 65535;
}

function toUrl(v: string | URL, what: string): URL {
  try {
    return new URL(v);
  } catch {
    throw new TypeError(`probe: ${what} ${JSON.stringify(String(v))} is not a URL`);
  }
}
