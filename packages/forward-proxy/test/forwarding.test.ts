// Peer: the proxy program (bin/proxy-server.js) spawned as a child process; node:http clients
// and raw-socket clients; node:http and raw TCP origins on 127.0.0.1 that count their
// connections. Connections to origins kept open and their limits, retries, pipelining, framing.
import { readFile } from 'node:fs/promises';
import {
  Agent,
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  freePort,
  killAllSpawned,
  listen,
  type RunningProxy,
  rssKb,
  startProgram,
  stopProgram,
  viaProxy,
} from './support.js';

const ADDRESS = '127.0.4.30';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** Which connection of the origin carried it, counted from 1. */
  readonly conn: number;
}

interface Origin {
  readonly server: Server;
  readonly port: number;
  readonly seen: Seen[];
  /** Connections accepted so far. */
  accepted: number;
  /** Connections open now, and the most ever open at once. */
  open: number;
  maxOpen: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse, seen: Seen, perConn: number) => void;

/** An HTTP origin that records each request and the connection it came on. */
async function startCountingOrigin(handle?: Handler): Promise<Origin> {
  const o: Origin = {
    server: createHttpServer(),
    port: 0,
    seen: [],
    accepted: 0,
    open: 0,
    maxOpen: 0,
  };
  // Idle connections stay open until the proxy closes them, however slow the test runs.
  o.server.keepAliveTimeout = 60_000;
  const ids = new WeakMap<Socket, { id: number; requests: number }>();
  o.server.on('connection', (s: Socket) => {
    ids.set(s, { id: ++o.accepted, requests: 0 });
    o.open++;
    o.maxOpen = Math.max(o.maxOpen, o.open);
    s.on('close', () => o.open--);
  });
  o.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const c = ids.get(req.socket) ?? { id: 0, requests: 0 };
      c.requests++;
      const seen: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        conn: c.id,
      };
      o.seen.push(seen);
      if (handle !== undefined) return handle(req, res, seen, c.requests);
      const delay = Number(new URL(seen.url, 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => {
        const body = JSON.stringify({ url: seen.url, conn: seen.conn, body: seen.body });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      }, delay);
    });
  });
  const port = await listen(o.server);
  return Object.assign(o, { port });
}

/** A request through the proxy on `agent`'s connections; resolves with status, body, reuse. */
function get(
  proxy: RunningProxy,
  url: string,
  opts: {
    agent?: Agent | false;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called once the request has been handed to the operating system. */
    onSent?: () => void;
  } = {},
): Promise<{ status: number; body: string; reused: boolean; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      path: url,
      method: opts.method ?? 'GET',
      agent: opts.agent ?? false,
      headers: opts.headers,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body,
          reused: req.reusedSocket,
          headers: res.headers,
        }),
      );
    });
    req.on('error', reject);
    if (opts.onSent !== undefined) req.on('finish', opts.onSent);
    req.end(opts.body);
  });
}

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * A raw client connection: sends bytes as given and reads answers one by one (bodies by
 * Content-Length, chunked or until close), so pipelining and HTTP/1.0 can be spoken.
 */
function rawClient(proxy: RunningProxy): {
  socket: Socket;
  read(): Promise<RawResponse>;
  closed: Promise<void>;
} {
  const socket = connect({ host: proxy.address, port: proxy.port, localAddress: '127.0.0.1' });
  let buf = '';
  let ended = false;
  let wake: (() => void) | undefined;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    buf += d;
    wake?.();
  });
  const closed = new Promise<void>((r) =>
    socket.on('close', () => {
      ended = true;
      wake?.();
      r();
    }),
  );
  socket.on('error', () => {});
  const more = () =>
    new Promise<void>((r) => {
      if (ended) throw new Error(`connection closed; have ${JSON.stringify(buf)}`);
      wake = () => {
        wake = undefined;
        r();
      };
    });
  const read = async (): Promise<RawResponse> => {
    let end = buf.indexOf('\r\n\r\n');
    while (end < 0) {
      await more();
      end = buf.indexOf('\r\n\r\n');
    }
    const [line = '', ...lines] = buf.slice(0, end).split('\r\n');
    buf = buf.slice(end + 4);
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const status = Number(line.split(' ')[1]);
    if (status < 200 || status === 204 || status === 304) return { status, headers, body: '' };
    if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      while (buf.length < n) await more();
      const body = buf.slice(0, n);
      buf = buf.slice(n);
      return { status, headers, body };
    }
    if (headers['transfer-encoding'] === 'chunked') {
      let body = '';
      for (;;) {
        let nl = buf.indexOf('\r\n');
        while (nl < 0) {
          await more();
          nl = buf.indexOf('\r\n');
        }
        const size = Number.parseInt(buf.slice(0, nl), 16);
        while (buf.length < nl + 2 + size + 2) await more();
        body += buf.slice(nl + 2, nl + 2 + size);
        buf = buf.slice(nl + 2 + size + 2);
        if (size === 0) return { status, headers, body };
      }
    }
    while (!ended) await more().catch(() => {});
    const body = buf;
    buf = '';
    return { status, headers, body };
  };
  return { socket, read, closed };
}

let proxy: RunningProxy;

beforeAll(async () => {
  proxy = await startProgram({
    address: ADDRESS,
    port: await freePort(ADDRESS),
    limits: { originIdleMs: 60_000 },
  });
}, 30_000);

afterAll(async () => {
  await stopProgram(proxy);
  await killAllSpawned();
});

describe('connections to origins are kept open and reused', () => {
  it('sequential requests from separate client connections share one origin connection', async () => {
    const o = await startCountingOrigin();
    try {
      for (let i = 0; i < 10; i++) {
        const r = await get(proxy, `http://127.0.0.1:${o.port}/n${i}`);
        expect(r.status).toBe(200);
      }
      expect(o.seen.map((s) => s.url)).toEqual(Array.from({ length: 10 }, (_, i) => `/n${i}`));
      expect(o.accepted).toBe(1);
      // Each request still has its own access-log line (written within a moment).
      const logged = async () =>
        (await readFile(proxy.accessLog, 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { target: string; status: number })
          .filter((l) => l.target.startsWith(`http://127.0.0.1:${o.port}/n`))
          .map((l) => l.status);
      const want = Array.from({ length: 10 }, () => 200);
      const deadline = Date.now() + 30_000; // a safety net; the lines come within 100 ms
      while ((await logged()).length < want.length && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(await logged()).toEqual(want);
    } finally {
      o.server.close();
    }
  });

  it('a GET on a kept-open connection the origin closes unanswered is sent again on a new one', async () => {
    // The second request on any connection is dropped with the connection: what a client
    // sees when an origin closes an idle connection just as the request arrives.
    const o = await startCountingOrigin((req, res, seen, perConn) => {
      if (perConn >= 2) return req.socket.destroy();
      res.writeHead(200, { 'content-length': seen.url.length });
      res.end(seen.url);
    });
    try {
      expect((await get(proxy, `http://127.0.0.1:${o.port}/first`)).body).toBe('/first');
      expect((await get(proxy, `http://127.0.0.1:${o.port}/again`)).body).toBe('/again');
      expect(o.seen.map((s) => `${s.url}@${s.conn}`)).toEqual(['/first@1', '/again@1', '/again@2']);
    } finally {
      o.server.close();
    }
  });

  it('an origin that closes each connection after answering is met on a new one every time', async () => {
    // A raw origin: HTTP/1.1 answers without Connection: close, then FIN shortly after.
    let accepted = 0;
    const rude = createTcpServer((s) => {
      accepted++;
      s.on('error', () => {});
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        setTimeout(() => s.end(), 20);
      });
    });
    const port = await listen(rude);
    try {
      for (let i = 0; i < 5; i++) {
        const r = await get(proxy, `http://127.0.0.1:${port}/`);
        expect(r).toMatchObject({ status: 200, body: 'ok' });
        await new Promise((r) => setTimeout(r, 60));
      }
      expect(accepted).toBe(5);
    } finally {
      rude.close();
    }
  });

  it('a POST never rides a kept-open connection, and is never sent twice', async () => {
    const o = await startCountingOrigin((req, res, seen, perConn) => {
      if (seen.url === '/drop' || perConn >= 2) return req.socket.destroy();
      res.writeHead(200, { 'content-length': seen.url.length });
      res.end(seen.url);
    });
    try {
      expect((await get(proxy, `http://127.0.0.1:${o.port}/warm`)).status).toBe(200);
      // An idle connection is open; each POST, with or without a body, goes on a new one.
      const empty = await get(proxy, `http://127.0.0.1:${o.port}/empty`, { method: 'POST' });
      expect(empty).toMatchObject({ status: 200, body: '/empty' });
      const post = await get(proxy, `http://127.0.0.1:${o.port}/post`, {
        method: 'POST',
        body: 'payload',
      });
      expect(post).toMatchObject({ status: 200, body: '/post' });
      expect(o.seen.map((s) => `${s.method} ${s.url}@${s.conn}`)).toEqual([
        'GET /warm@1',
        'POST /empty@2',
        'POST /post@3',
      ]);
      // An origin that drops a POST: 502, and the POST arrived exactly once.
      const dropped = await get(proxy, `http://127.0.0.1:${o.port}/drop`, {
        method: 'POST',
        body: 'once',
      });
      expect(dropped.status).toBe(502);
      expect(o.seen.filter((s) => s.url === '/drop')).toHaveLength(1);
    } finally {
      o.server.close();
    }
  });
});

describe('per-origin limits', () => {
  let limited: RunningProxy;

  beforeAll(async () => {
    const address = '127.0.4.31';
    limited = await startProgram({
      address,
      port: await freePort(address),
      // Idle connections are kept long, so the one kept is there for the next request however
      // slow the machine; the load test sees originIdleMs close them.
      limits: { maxOriginConnections: 2, maxIdleOriginConnections: 1, originIdleMs: 60_000 },
    });
  }, 30_000);

  afterAll(async () => {
    await stopProgram(limited);
  });

  it('never opens more than maxOriginConnections; the rest wait their turn', async () => {
    // The origin holds every answer until two requests are in at once and all six have been
    // sent to the proxy (and a moment more, for it to read them): the proxy must by then have
    // two connections open and the other four requests waiting.
    const held: (() => void)[] = [];
    let sent = 0;
    let released = false;
    const release = () => {
      if (released || held.length < 2 || sent < 6) return;
      released = true;
      setTimeout(() => {
        for (const h of held.splice(0)) h();
      }, 200);
    };
    const o = await startCountingOrigin((_req, res, seen) => {
      const answer = () => {
        res.writeHead(200, { 'content-length': seen.url.length });
        res.end(seen.url);
      };
      if (released) return answer();
      held.push(answer);
      release();
    });
    try {
      const all = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          get(limited, `http://127.0.0.1:${o.port}/w${i}`, {
            onSent: () => {
              sent++;
              release();
            },
          }),
        ),
      );
      expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(o.maxOpen).toBe(2);
      expect(o.accepted).toBe(2);
      // One stays open for the next request (maxIdleOriginConnections), which reuses it.
      expect(await eventually(() => o.open === 1)).toBe(true);
      expect((await get(limited, `http://127.0.0.1:${o.port}/next`)).status).toBe(200);
      expect(o.accepted).toBe(2);
    } finally {
      o.server.close();
    }
  });
});

describe('pipelining and framing', () => {
  it('answers pipelined requests in order on one connection, a body in between', async () => {
    const o = await startCountingOrigin();
    try {
      const c = rawClient(proxy);
      const base = `http://127.0.0.1:${o.port}`;
      c.socket.write(
        `GET ${base}/p1?delay=50 HTTP/1.1\r\nHost: x\r\n\r\n` +
          `POST ${base}/p2 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody` +
          `GET ${base}/p3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      const answers = [await c.read(), await c.read(), await c.read()];
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers.map((a) => (JSON.parse(a.body) as { url: string; body: string }).url)).toEqual(
        ['/p1?delay=50', '/p2', '/p3'],
      );
      expect((JSON.parse(answers[1]?.body ?? '{}') as { body: string }).body).toBe('body');
      expect(answers[2]?.headers.connection).toBe('close');
      await c.closed;
    } finally {
      o.server.close();
    }
  });

  it('passes a chunked answer through to HTTP/1.1 and decodes it for HTTP/1.0', async () => {
    const o = await startCountingOrigin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
      setTimeout(() => res.end('second'), 20);
    });
    try {
      const one = await get(proxy, `http://127.0.0.1:${o.port}/c`);
      expect(one.body).toBe('first second');
      expect(one.headers['transfer-encoding']).toBe('chunked');
      const c = rawClient(proxy);
      c.socket.write(`GET http://127.0.0.1:${o.port}/c HTTP/1.0\r\n\r\n`);
      const old = await c.read();
      expect(old.body).toBe('first second');
      expect(old.headers['transfer-encoding']).toBeUndefined();
      await c.closed;
    } finally {
      o.server.close();
    }
  });

  it('an answer delimited by close reaches an HTTP/1.1 client chunked, and its connection stays', async () => {
    const closer = createTcpServer((s) => {
      s.on('error', () => {});
      s.once('data', () =>
        s.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end'),
      );
    });
    const port = await listen(closer);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const a = await get(proxy, `http://127.0.0.1:${port}/`, { agent });
      expect(a).toMatchObject({ status: 200, body: 'until the end', reused: false });
      const b = await get(proxy, `http://127.0.0.1:${port}/`, { agent });
      expect(b).toMatchObject({ status: 200, body: 'until the end', reused: true });
    } finally {
      agent.destroy();
      closer.close();
    }
  });

  it('forwards a chunked request body, and HEAD answers keep their length without a body', async () => {
    const o = await startCountingOrigin((req, res, seen) => {
      res.writeHead(200, { 'content-length': 100 });
      res.end(req.method === 'HEAD' ? undefined : seen.body.padEnd(100, '.'));
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const chunked = await new Promise<string>((resolve, reject) => {
        const req = request({
          host: proxy.address,
          port: proxy.port,
          method: 'PUT',
          path: `http://127.0.0.1:${o.port}/up`,
          agent,
        });
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => {
            body += d;
          });
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        req.write('part one, ');
        setTimeout(() => req.end('part two'), 20);
      });
      expect(o.seen[0]?.headers['transfer-encoding']).toBe('chunked');
      expect(chunked.startsWith('part one, part two.')).toBe(true);
      const head = await get(proxy, `http://127.0.0.1:${o.port}/h`, { agent, method: 'HEAD' });
      expect(head).toMatchObject({ status: 200, body: '', reused: true });
      expect(head.headers['content-length']).toBe('100');
      const after = await get(proxy, `http://127.0.0.1:${o.port}/after`, { agent });
      expect(after).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
      o.server.close();
    }
  });

  it('sends Host from the URI, drops hop-by-hop fields, and appends to Via', async () => {
    const o = await startCountingOrigin();
    try {
      const c = rawClient(proxy);
      c.socket.write(
        `GET http://127.0.0.1:${o.port}/h HTTP/1.1\r\nHost: elsewhere.test\r\n` +
          'Connection: close, X-Hop\r\nX-Hop: 1\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n' +
          'Keep-Alive: timeout=5\r\nVia: 1.0 first\r\nX-End: 2\r\n\r\n',
      );
      expect((await c.read()).status).toBe(200);
      const h = o.seen[0]?.headers ?? {};
      expect(h.host).toBe(`127.0.0.1:${o.port}`);
      expect(h['x-hop']).toBeUndefined();
      expect(h['proxy-authorization']).toBeUndefined();
      expect(h['keep-alive']).toBeUndefined();
      expect(h.via).toBe('1.0 first, 1.1 proxy-op');
      expect(h['x-end']).toBe('2');
    } finally {
      o.server.close();
    }
  });

  it('answers Expect: 100-continue with 100 before the body is sent', async () => {
    const o = await startCountingOrigin();
    try {
      const status = await new Promise<number[]>((resolve, reject) => {
        const seen: number[] = [];
        const req = request({
          host: proxy.address,
          port: proxy.port,
          method: 'POST',
          path: `http://127.0.0.1:${o.port}/e`,
          agent: false,
          headers: { expect: '100-continue', 'content-length': 4 },
        });
        req.on('continue', () => {
          seen.push(100);
          req.end('late');
        });
        req.on('response', (res) => {
          seen.push(res.statusCode ?? 0);
          res.resume().on('end', () => resolve(seen));
        });
        req.on('error', reject);
      });
      expect(status).toEqual([100, 200]);
      expect(o.seen[0]?.body).toBe('late');
    } finally {
      o.server.close();
    }
  });

  it('refuses ambiguous request framing (400) and a malformed origin answer (502)', async () => {
    const c = rawClient(proxy);
    c.socket.write(
      'POST http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n' +
        'Content-Length: 3\r\n\r\n0\r\n\r\n',
    );
    expect((await c.read()).status).toBe(400);
    const garbage = createTcpServer((s) => {
      s.on('error', () => {});
      s.once('data', () => s.end('NOT HTTP AT ALL\r\n\r\n'));
    });
    const port = await listen(garbage);
    try {
      expect((await viaProxy(proxy, `http://127.0.0.1:${port}/`)).status).toBe(502);
    } finally {
      garbage.close();
    }
  });
});

describe('backpressure on forwarded bodies', () => {
  const TOTAL = 64 * 1024 * 1024;
  const CHUNK = Buffer.alloc(64 * 1024, 7);

  it('a slow reader of an answer stalls the origin, not proxy memory', async () => {
    const big = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-length': TOTAL });
      let sent = 0;
      const pump = () => {
        while (sent < TOTAL) {
          sent += CHUNK.length;
          if (!res.write(CHUNK)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const port = await listen(big);
    try {
      const rssBefore = rssKb(proxy.pid);
      const received = await new Promise<{ n: number; stalled: number }>((resolve, reject) => {
        const req = request({
          host: proxy.address,
          port: proxy.port,
          path: `http://127.0.0.1:${port}/big`,
          agent: false,
        });
        req.on('response', (res) => {
          res.pause();
          setTimeout(() => {
            const stalled = rssKb(proxy.pid);
            let n = 0;
            res.on('data', (c: Buffer) => {
              n += c.length;
            });
            res.on('end', () => resolve({ n, stalled }));
            res.resume();
          }, 1_000); // the client reads nothing meanwhile
        });
        req.on('error', reject);
        req.end();
      });
      expect(received.n).toBe(TOTAL);
      expect(received.stalled - rssBefore).toBeLessThan(32 * 1024);
    } finally {
      big.close();
    }
  }, 60_000);

  it('an origin that reads a request body slowly stalls the client, not proxy memory', async () => {
    let stalled = 0;
    const slow = createHttpServer((req, res) => {
      req.pause();
      setTimeout(() => {
        stalled = rssKb(proxy.pid);
        let n = 0;
        req.on('data', (c: Buffer) => {
          n += c.length;
        });
        req.on('end', () => res.end(String(n)));
        req.resume();
      }, 1_000); // the origin reads nothing meanwhile
    });
    const port = await listen(slow);
    try {
      const rssBefore = rssKb(proxy.pid);
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request({
          host: proxy.address,
          port: proxy.port,
          method: 'PUT',
          path: `http://127.0.0.1:${port}/upload`,
          agent: false,
          headers: { 'content-length': TOTAL },
        });
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => {
            body += d;
          });
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        let sent = 0;
        const pump = () => {
          while (sent < TOTAL) {
            sent += CHUNK.length;
            if (!req.write(CHUNK)) return void req.once('drain', pump);
          }
          req.end();
        };
        pump();
      });
      expect(answer).toBe(String(TOTAL));
      expect(stalled - rssBefore).toBeLessThan(32 * 1024);
    } finally {
      slow.close();
    }
  }, 60_000);
});
