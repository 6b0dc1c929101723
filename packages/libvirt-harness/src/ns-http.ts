/**
 * An HTTP server inside a network namespace (a Node child entered into it):
 * it serves files with their `Content-Length` (a base image for a provider
 * to download) and answers every other request with what it received, so
 * a test sees what reached the origin through a proxy, and from where.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import type { NetworkNamespace } from './netns.js';
import { stopChild } from './process.js';

/** A request the server answered, as it saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  /** The peer's address (a proxy's, for a request through one). */
  readonly remoteAddress: string;
  readonly via?: string;
  readonly forwardedFor?: string;
}

/** A running {@link startNamespacedHttpServer}. */
export interface NamespacedHttpServer {
  readonly host: string;
  readonly port: number;
  /** `http://host:port<path>`. */
  url(path: string): string;
  /** Every request answered so far, oldest first. */
  requests(): readonly SeenRequest[];
  stop(): Promise<void>;
}

// CommonJS on purpose: `node -e` with no package around it.
const SERVER_SCRIPT = `
const http = require('node:http');
const fs = require('node:fs');
const files = JSON.parse(process.env.FILES || '{}');
const server = http.createServer((req, res) => {
  const path = (req.url || '/').split('?')[0];
  const seen = {
    method: req.method,
    url: req.url,
    remoteAddress: req.socket.remoteAddress,
    via: req.headers.via,
    forwardedFor: req.headers['x-forwarded-for'],
  };
  process.stdout.write('request ' + JSON.stringify(seen) + '\\n');
  const file = files[path];
  if (file !== undefined && req.method === 'GET') {
    const size = fs.statSync(file).size;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    fs.createReadStream(file).pipe(res);
    return;
  }
  req.resume();
  req.on('end', () => {
    const body = JSON.stringify({ origin: true, ...seen });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.PORT), process.env.HOST, () => {
  process.stdout.write('listening ' + server.address().port + '\\n');
});
process.on('SIGTERM', () => process.exit(0));
`;

/**
 * Starts the server in `netns` on `host:port` (port 0 picks one), serving
 * `files` (URL path → file on this machine). Resolves once it listens.
 */
export async function startNamespacedHttpServer(
  netns: Pick<NetworkNamespace, 'spawn'>,
  opts: { host: string; port?: number; files?: Readonly<Record<string, string>> },
): Promise<NamespacedHttpServer> {
  const child: ChildProcess = netns.spawn(
    process.execPath,
    ['--input-type=commonjs', '-e', SERVER_SCRIPT],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOST: opts.host,
        PORT: String(opts.port ?? 0),
        FILES: JSON.stringify(opts.files ?? {}),
      },
    },
  );
  const seen: SeenRequest[] = [];
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  let buffered = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      buffered += d;
      for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
        const line = buffered.slice(0, i);
        buffered = buffered.slice(i + 1);
        if (line.startsWith('listening ')) resolve(Number(line.slice('listening '.length)));
        else if (line.startsWith('request ')) seen.push(JSON.parse(line.slice(8)) as SeenRequest);
      }
    });
    child.once('exit', (code) => reject(new Error(`http server exited (${code}): ${stderr}`)));
    child.once('error', reject);
  });
  return {
    host: opts.host,
    port,
    url: (path) => `http://${opts.host}:${port}${path}`,
    requests: () => [...seen],
    stop: () => stopChild(child),
  };
}
