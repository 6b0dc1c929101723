/**
 * The whoami target: an HTTP listener and an HTTPS listener that answer a
 * request carrying a nonce (`?nonce=...`) with that nonce and the source
 * address they saw, as JSON, never cached. A probe through a proxy reaches
 * it, and learns from the answer both that the proxy carried its request
 * (the nonce is fresh) and the proxy's egress address.
 *
 * @module
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type SelfSignedCertificate, selfSignedCertificate } from './cert.js';
import { normalAddress, type ProbeTargetSpec } from './types.js';

/** A nonce the target answers: what the probe sends (hex), or anything of its kind. */
const NONCE = /^[A-Za-z0-9_-]{8,128}$/;

/** Options of {@link startWhoami}. */
export interface WhoamiOptions {
  /** The address both listeners listen on (default `127.0.0.1`). */
  readonly host?: string | undefined;
  /** The HTTP listener's port (default 0: a free one). */
  readonly port?: number | undefined;
  /**
   * The HTTPS listener: its port (default 0), and its certificate and key
   * (PEM; default a self-signed certificate made at start for `names`);
   * `false` for none.
   */
  readonly tls?:
    | false
    | {
        readonly host?: string | undefined;
        readonly port?: number | undefined;
        readonly cert?: string | undefined;
        readonly key?: string | undefined;
      }
    | undefined;
  /** The names (host names, addresses) of the self-signed certificate; default the listening address. */
  readonly names?: readonly string[] | undefined;
}

/** What the target answers (JSON). */
export interface WhoamiAnswer {
  /** The nonce of the request. */
  readonly nonce: string;
  /** The source address the target saw (IPv4-mapped addresses as IPv4). */
  readonly source: string;
  /** The source port it saw. */
  readonly port: number;
  /** Whether the request came over TLS. */
  readonly tls: boolean;
}

/** A running whoami target. */
export interface Whoami {
  /** The HTTP listener's URL (`http://host:port/`). */
  readonly http: URL;
  /** The HTTPS listener's URL, when there is one. */
  readonly https: URL | undefined;
  /** The HTTPS listener's certificate, PEM. */
  readonly certificate: string | undefined;
  /** Its SHA-256 fingerprint (`AB:CD:...`). */
  readonly fingerprint256: string | undefined;
  /** Requests answered with a nonce so far. */
  readonly answered: number;
  /**
   * The target as a probe takes it: GET to the HTTP listener, CONNECT to
   * the HTTPS one (else the HTTP one), its certificate pinned.
   */
  target(): ProbeTargetSpec;
  /** Stops both listeners and closes their connections. */
  close(): Promise<void>;
}

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlOf(scheme: 'http' | 'https', a: AddressInfo): URL {
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return new URL(`${scheme}://${host}:${a.port}/`);
}

/**
 * Starts the target: an HTTP listener and (unless `tls: false`) an HTTPS
 * one. Each answers `GET /anything?nonce=N` with `200` and
 * {@link WhoamiAnswer} as JSON (`Cache-Control: no-store`, and
 * `Connection: close`: one request per connection), a request without a
 * valid nonce with `400`.
 */
export async function startWhoami(options: WhoamiOptions = {}): Promise<Whoami> {
  const host = options.host ?? '127.0.0.1';
  let answered = 0;
  const handler = (secure: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const n = new URL(req.url ?? '/', 'http://target').searchParams.get('nonce');
    // One request per connection: a proxy keeps no idle connection to the target open, so a
    // target probed through thousands of proxies holds only the connections of probes in flight.
    const headers = {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      connection: 'close',
    };
    if (n === null || !NONCE.test(n)) {
      res.writeHead(400, headers).end('{"error":"a whoami request carries ?nonce="}\n');
      return;
    }
    answered++;
    const answer: WhoamiAnswer = {
      nonce: n,
      source: normalAddress(req.socket.remoteAddress) ?? '',
      port: req.socket.remotePort ?? 0,
      tls: secure,
    };
    res.writeHead(200, headers).end(`${JSON.stringify(answer)}\n`);
  };
  const servers: Server[] = [];
  const tune = (s: Server) => {
    s.keepAliveTimeout = 1_000;
    s.headersTimeout = 10_000;
    s.requestTimeout = 10_000;
    servers.push(s);
    return s;
  };
  const close = async () => {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeAllConnections();
          }),
      ),
    );
  };
  try {
    const plain = tune(createHttpServer(handler(false)));
    const http = urlOf('http', await listen(plain, host, options.port ?? 0));
    let https: URL | undefined;
    let pair: Pick<SelfSignedCertificate, 'cert' | 'key'> | undefined;
    let fingerprint256: string | undefined;
    if (options.tls !== false) {
      const t = options.tls ?? {};
      const tlsHost = t.host ?? host;
      if ((t.cert === undefined) !== (t.key === undefined)) {
        throw new TypeError('startWhoami: tls needs both cert and key, or neither');
      }
      if (t.cert !== undefined && t.key !== undefined) {
        pair = { cert: t.cert, key: t.key };
        const { X509Certificate } = await import('node:crypto');
        fingerprint256 = new X509Certificate(t.cert).fingerprint256;
      } else {
        const made = selfSignedCertificate(options.names ?? [tlsHost]);
        pair = made;
        fingerprint256 = made.fingerprint256;
      }
      const secure = tune(createHttpsServer({ cert: pair.cert, key: pair.key }, handler(true)));
      https = urlOf('https', await listen(secure, tlsHost, t.port ?? 0));
    }
    const certificate = pair?.cert;
    return {
      http,
      https,
      certificate,
      fingerprint256,
      get answered() {
        return answered;
      },
      target: () => ({
        get: http,
        connect: https ?? http,
        ...(fingerprint256 === undefined ? {} : { tls: { fingerprint256 } }),
      }),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
