/**
 * Loopback peers for tests: a free port, a server listening on 127.0.0.1,
 * polling until something has happened, and an HTTP origin that echoes
 * what it gets.
 *
 * @module
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';

/** A free TCP port on `address`. */
export function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createTcpServer();
    s.once('error', reject);
    s.listen({ host: address, port: 0 }, () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Listens on 127.0.0.1 port 0; resolves with the port. */
export function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  return new Promise((resolve) => {
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = server.address();
      resolve(typeof a === 'object' && a !== null ? a.port : 0);
    });
  });
}

/**
 * Polls `fn` until it is true or `ms` pass; resolves with the last answer. The deadline is a
 * safety net for a loaded machine, never a measure: what is awaited must happen by itself.
 */
export async function eventually(fn: () => boolean, ms = 30_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/**
 * An HTTP origin on 127.0.0.1 that echoes method, path, `via` and body as JSON, after the
 * milliseconds a `delay` query parameter names.
 */
export async function startHttpEchoOrigin(): Promise<{ server: Server; port: number }> {
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => {
        const body = JSON.stringify({
          method: req.method,
          path: req.url,
          via: req.headers.via ?? null,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }, delay);
    });
  });
  const port = await listen(server);
  return { server, port };
}
