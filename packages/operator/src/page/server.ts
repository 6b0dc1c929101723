/**
 * The status page's HTTP server: the bundled page, its event stream
 * (`/events`), the state and a Proxy's detail as JSON (`/api/...`), read
 * only (GET and HEAD; anything else is 405). Every answer carries a strict
 * Content-Security-Policy (scripts and styles from the page's own files
 * only, no inline ones, Trusted Types required so no string can become
 * markup), `X-Content-Type-Options: nosniff` and no-framing headers; a
 * request whose `Host` is not an IP address or `localhost` is refused, so a
 * web site cannot read the page through DNS rebinding.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { type Logger, silentLogger } from '@proxy-op/contract';
import { parseListenAddress } from '../process/listen.js';
import { defaultAssetsDir, loadAssets, type PageAsset } from './assets.js';
import { pageState, proxyDetail, type StatusPageSource } from './snapshot.js';
import { StatusStream, type StreamOptions, type StreamStats } from './stream.js';
import type { PageRole } from './wire.js';

/** Options of {@link startStatusPage}. */
export interface StatusPageOptions extends Omit<StreamOptions, 'logger'> {
  /** `host:port` to listen on (`127.0.0.1:0`: a free port). */
  readonly listen: string;
  /** Where this operator stands, asked at every push. */
  readonly role: () => PageRole;
  /** The data to serve; none (a standby) until {@link StatusPage.serve} is given some. */
  readonly source?: StatusPageSource | undefined;
  /** Where the bundled page is (default: the package's own). */
  readonly assetsDir?: string | undefined;
  /** Where the server logs; silent when omitted. */
  readonly logger?: Logger | undefined;
}

/** A running status page. */
export interface StatusPage {
  /** `http://host:port/`. */
  readonly url: string;
  /** Serves `source` from now on (undefined: no data, as a standby); every viewer starts afresh. */
  serve(source: StatusPageSource | undefined): void;
  /** The event stream's counts. */
  stats(): StreamStats;
  /** Ends every stream and stops listening. */
  close(): Promise<void>;
}

/** The Content-Security-Policy of every answer. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Whether `host` (a Host header) names loopback or an address: not a name a web site could point here. */
export function allowedHost(host: string | undefined): boolean {
  if (host === undefined || host === '') return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || isIP(name) !== 0;
}

function text(res: ServerResponse, status: number, body: string, head = false): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(head ? undefined : `${body}\n`);
}

function json(res: ServerResponse, status: number, value: unknown, head: boolean): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  });
  res.end(head ? undefined : body);
}

function asset(req: IncomingMessage, res: ServerResponse, a: PageAsset, head: boolean): void {
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? a.gzip : a.body;
  res.writeHead(200, {
    'content-type': a.type,
    'content-length': body.byteLength,
    'cache-control': a.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    vary: 'accept-encoding',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  });
  res.end(head ? undefined : body);
}

/**
 * Starts the status page on `opts.listen`. It answers at once; the page
 * shows this replica's role and, once it has a source, the data.
 */
export async function startStatusPage(opts: StatusPageOptions): Promise<StatusPage> {
  const logger = opts.logger ?? silentLogger;
  const assets = await loadAssets(opts.assetsDir ?? defaultAssetsDir());
  if (assets === undefined) {
    logger.warn({}, 'the status page is not built (npm run build); it answers 503');
  }
  let source = opts.source;
  const stream = new StatusStream(opts.role, source, { ...opts, logger });
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.setHeader('allow', 'GET, HEAD');
      text(res, 405, 'the status page is read-only: GET and HEAD only');
      return;
    }
    if (!allowedHost(req.headers.host)) {
      text(res, 403, 'the status page answers to localhost and IP addresses only', head);
      return;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/events') {
      if (head) {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' }).end();
      } else {
        const refused = stream.attach(res, req.socket.remoteAddress ?? '');
        if (refused === 'too-many-from-source') {
          res.setHeader('retry-after', '10');
          text(res, 429, 'too many event streams from this address');
        } else if (refused === 'too-many-viewers') {
          res.setHeader('retry-after', '10');
          text(res, 503, 'too many viewers');
        }
      }
      return;
    }
    if (path === '/api/state') {
      json(res, 200, pageState(source, opts.role()), head);
      return;
    }
    const m = /^\/api\/proxies\/([^/]+)\/([^/]+)$/.exec(path);
    if (m !== null) {
      let key: string;
      try {
        key = `${decodeURIComponent(m[1] ?? '')}/${decodeURIComponent(m[2] ?? '')}`;
      } catch {
        text(res, 400, 'not a Proxy name', head);
        return;
      }
      const detail = source === undefined ? undefined : proxyDetail(source, key);
      if (detail === undefined) json(res, 404, { error: `no Proxy ${key}` }, head);
      else json(res, 200, detail, head);
      return;
    }
    if (path === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (assets === undefined) {
      text(res, 503, 'the status page is not built: run "npm run build"', head);
      return;
    }
    const a = assets.get(path === '/' ? '/index.html' : path);
    if (a === undefined) text(res, 404, 'not found', head);
    else asset(req, res, a, head);
  };
  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      // The page must never take the operator down with it.
      logger.error(
        { err: (err as Error).message, path: req.url },
        'the status page failed a request',
      );
      if (!res.headersSent) text(res, 500, 'the status page failed this request');
      else res.destroy();
    }
  });
  const { host, port } = parseListenAddress(opts.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${h === '0.0.0.0' || h === '[::]' ? '127.0.0.1' : h}:${a.port}/`,
    serve(next) {
      source = next;
      stream.serve(next);
    },
    stats: () => stream.stats(),
    async close() {
      stream.close();
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
    },
  };
}
