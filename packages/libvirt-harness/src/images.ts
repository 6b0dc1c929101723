/**
 * An HTTP image server on loopback for the image-cache tests: serves files
 * or buffers with Content-Length, counts requests, and misbehaves on demand
 * (a wrong body, a short body, no Content-Length, an error status).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';

/** How a path is served: as it is, one byte changed, half of it, without Content-Length, or with an error status. */
export type ImageMode = 'ok' | 'corrupt' | 'short' | 'no-length' | { status: number };

interface Entry {
  source: Buffer | string;
  bytes: number;
  mode: ImageMode;
}

/** A running {@link startImageServer}. */
export interface ImageServer {
  /** The URL of `path` (`/name.qcow2`). */
  url(path: string): string;
  /** Serves a buffer or a file at `path`; resolves with its SHA-256. */
  serve(path: string, source: Buffer | string, mode?: ImageMode): Promise<string>;
  /** Changes how `path` is served from now on. */
  mode(path: string, mode: ImageMode): void;
  /** GET requests for `path` so far. */
  requests(path: string): number;
  close(): Promise<void>;
}

/** The SHA-256 (hex) of a buffer or a file. */
export async function sha256Of(source: Buffer | string): Promise<string> {
  const h = createHash('sha256');
  if (typeof source !== 'string') return h.update(source).digest('hex');
  for await (const chunk of createReadStream(source)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Starts the image server on 127.0.0.1 and a free port. */
export async function startImageServer(): Promise<ImageServer> {
  const entries = new Map<string, Entry>();
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const e = entries.get(path);
    if (req.method === 'GET') counts.set(path, (counts.get(path) ?? 0) + 1);
    if (e === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (typeof e.mode === 'object') {
      res.writeHead(e.mode.status, { 'content-type': 'text/plain' }).end('refused');
      return;
    }
    const body = (): NodeJS.ReadableStream =>
      typeof e.source === 'string' ? createReadStream(e.source) : bufferStream(e.source);
    if (e.mode === 'no-length') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      body().pipe(res);
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(e.bytes),
    });
    if (e.mode === 'short') {
      // Half the promised bytes, then the connection ends.
      const half = Math.floor(e.bytes / 2);
      let sent = 0;
      const src = body();
      src.on('data', (c: Buffer) => {
        const part = c.subarray(0, Math.max(0, half - sent));
        sent += part.length;
        if (sent >= half) {
          (src as unknown as { destroy(): void }).destroy();
          // Cut once what was promised so far has left, so the client sees a short body.
          res.write(part, () => res.socket?.destroy());
        } else if (part.length > 0) res.write(part);
      });
      return;
    }
    if (e.mode === 'corrupt') {
      // The same length, one byte in the middle changed.
      const src = body();
      let at = 0;
      const flip = Math.floor(e.bytes / 2);
      src.on('data', (c: Buffer) => {
        const copy = Buffer.from(c);
        if (flip >= at && flip < at + copy.length) copy[flip - at] = (copy[flip - at] ?? 0) ^ 0xff;
        at += copy.length;
        res.write(copy);
      });
      src.on('end', () => res.end());
      return;
    }
    body().pipe(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  return {
    url: (path) => `http://127.0.0.1:${addr.port}${path}`,
    async serve(path, source, mode = 'ok') {
      const bytes = typeof source === 'string' ? (await stat(source)).size : source.length;
      entries.set(path, { source, bytes, mode });
      return sha256Of(source);
    },
    mode(path, mode) {
      const e = entries.get(path);
      if (e === undefined) throw new Error(`nothing served at ${path}`);
      e.mode = mode;
    },
    requests: (path) => counts.get(path) ?? 0,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function bufferStream(b: Buffer): NodeJS.ReadableStream {
  const chunk = 64 * 1024;
  return Readable.from(
    (function* () {
      for (let i = 0; i < b.length; i += chunk) yield b.subarray(i, i + chunk);
    })(),
  );
}
