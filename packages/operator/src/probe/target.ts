/**
 * The operator's own probe target: the whoami listeners of
 * `@proxy-op/probe` started where the flags say (loopback in standalone
 * mode, a port of the operator Pod behind a Service on Kubernetes), and the
 * target the probes are given: the URLs the proxies reach it at, and how
 * the TLS inside a tunnel is checked (its certificate pinned when the
 * proxies reach this very listener; not checked when they reach it through
 * a Service, which may send them to another replica with a certificate of
 * its own; the nonce is checked either way).
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { type ProbeTargetSpec, startWhoami, type Whoami } from '@proxy-op/probe';
import { parseListenAddress } from '../process/listen.js';

/** Where the target listens and how the proxies reach it. */
export interface ProbeTargetOptions {
  /** `host:port` of the HTTP listener. */
  readonly listen: string;
  /** `host:port` of the HTTPS listener, or `off`. */
  readonly tlsListen: string;
  /** The URL the proxies reach the HTTP listener at (default its own address). */
  readonly url?: string | undefined;
  /** The URL they reach the HTTPS listener at (default its own address). */
  readonly tlsUrl?: string | undefined;
}

/** A running target and what the probes are given. */
export interface OwnProbeTarget {
  /** The listeners. */
  readonly whoami: Whoami;
  /** The target the probes are given: the URLs the proxies reach, and the TLS checks. */
  readonly target: ProbeTargetSpec;
  /** Stops the listeners. */
  close(): Promise<void>;
}

function checkedUrl(v: string, scheme: 'http:' | 'https:', flag: string): URL {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new TypeError(`${flag}: "${v}" is not a URL`);
  }
  if (u.protocol !== scheme) throw new TypeError(`${flag}: "${v}" is not an ${scheme} URL`);
  return u;
}

/** Starts the target; throws a `TypeError` for a URL that is none, and what listen throws. */
export async function startProbeTarget(o: ProbeTargetOptions): Promise<OwnProbeTarget> {
  const http = parseListenAddress(o.listen);
  const tls = o.tlsListen === 'off' ? undefined : parseListenAddress(o.tlsListen);
  const url = o.url === undefined ? undefined : checkedUrl(o.url, 'http:', '--probe-url');
  const tlsUrl =
    o.tlsUrl === undefined ? undefined : checkedUrl(o.tlsUrl, 'https:', '--probe-tls-url');
  if (tlsUrl !== undefined && tls === undefined) {
    throw new TypeError('--probe-tls-url: the HTTPS listener is off (--probe-tls-listen off)');
  }
  const names = [
    ...new Set(
      [tls?.host, tlsUrl?.hostname.replace(/^\[|\]$/g, '')].filter(
        (n): n is string => n !== undefined && n !== '' && n !== '0.0.0.0' && n !== '::',
      ),
    ),
  ];
  const whoami = await startWhoami({
    host: http.host,
    port: http.port,
    tls: tls === undefined ? false : { host: tls.host, port: tls.port },
    names: names.length > 0 ? names : ['proxy-op-probe'],
  });
  const get = url ?? whoami.http;
  const connect = tlsUrl ?? whoami.https ?? get;
  const tlsCheck =
    whoami.https === undefined
      ? undefined
      : tlsUrl === undefined
        ? { fingerprint256: whoami.fingerprint256 }
        : { verify: false };
  return {
    whoami,
    target: { get, connect, ...(tlsCheck === undefined ? {} : { tls: tlsCheck }) },
    close: () => whoami.close(),
  };
}

/**
 * The ports a target listened on before, kept between runs (standalone: a
 * file beside the state file), so a target asked to pick its ports (`:0`)
 * comes back where the proxies' destination policies let them reach it.
 */
export interface TargetPorts {
  /** Where the target served before (its listeners' URLs), if it is known. */
  read(): Promise<ServedAt | undefined>;
  /** Keeps where the target serves now. */
  write(at: ServedAt): Promise<void>;
}

/** The URLs a target's listeners serve at. */
export interface ServedAt {
  readonly http: string;
  readonly https?: string | undefined;
}

/** The port of a URL of {@link ServedAt}, if it has one. */
function portOf(url: string | undefined): number | undefined {
  if (url === undefined || !URL.canParse(url)) return undefined;
  const port = Number(new URL(url).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/** `host:port` with `port` in place of a 0 port; the address as it is otherwise. */
function withPort(listen: string, port: number | undefined): string {
  if (port === undefined || listen === 'off') return listen;
  const { host, port: asked } = parseListenAddress(listen);
  if (asked !== 0) return listen;
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** True for an error of a port that cannot be had (taken, or not ours). */
function portTaken(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EADDRINUSE' || code === 'EACCES';
}

/**
 * Starts the target, on the ports `kept` remembers where `o` lets it pick
 * them, on new ones when those cannot be had; keeps the ports it got.
 */
export async function startKeptTarget(
  o: ProbeTargetOptions,
  kept: TargetPorts | undefined,
): Promise<OwnProbeTarget> {
  const before = await kept?.read().catch(() => undefined);
  let own: OwnProbeTarget;
  try {
    own = await startProbeTarget({
      ...o,
      listen: withPort(o.listen, portOf(before?.http)),
      tlsListen: withPort(o.tlsListen, portOf(before?.https)),
    });
  } catch (err) {
    if (before === undefined || !portTaken(err)) throw err;
    own = await startProbeTarget(o);
  }
  await kept?.write({ http: own.whoami.http.href, https: own.whoami.https?.href }).catch(() => {});
  return own;
}

/** Starts the target of a run (none when `o` is undefined) and logs where it serves. */
export async function startOwnTarget(
  o: ProbeTargetOptions | undefined,
  logger: Logger,
  kept?: TargetPorts | undefined,
): Promise<OwnProbeTarget | undefined> {
  if (o === undefined) return undefined;
  const own = await startKeptTarget(o, kept);
  logger.info(
    {
      http: own.whoami.http.href,
      https: own.whoami.https?.href,
      get: String(own.target.get),
      connect: String(own.target.connect),
    },
    'serving the probe target',
  );
  return own;
}
