// Peer: the proxy program (bin/proxy-server.js) spawned as a child process, with origins and
// raw-socket clients on 127.0.0.0/8: bad requests, limits, slow and half-closed peers, shutdown.
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  fdCount,
  freePort,
  killAllSpawned,
  listen,
  type RunningProxy,
  rawExchange,
  rawTunnel,
  rssKb,
  startEcho,
  startOrigin,
  startProgram,
  stopProgram,
  tunnel,
  viaProxy,
} from './support.js';

const ADDRESS = '127.0.4.10';

let origin: { server: Server; port: number };
let echo: { server: TcpServer; port: number };
let proxy: RunningProxy;

beforeAll(async () => {
  origin = await startOrigin();
  echo = await startEcho();
  proxy = await startProgram({ address: ADDRESS, port: await freePort(ADDRESS) });
}, 30_000);

afterAll(async () => {
  origin?.server.close();
  echo?.server.close();
  await stopProgram(proxy);
  await killAllSpawned();
});

describe('bad requests get 400 (or 431 / 408), never a crash', () => {
  const cases: [string, string, RegExp][] = [
    ['garbage instead of a request line', 'GARBAGE\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['a request line with no version', 'GET http://127.0.0.1/\r\n\r\n', /^HTTP\/1\.1 400 /],
    [
      'an origin-form request that is not the health check',
      'GET /foo HTTP/1.1\r\nHost: x\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    [
      'a scheme the proxy does not forward',
      'GET ftp://127.0.0.1/x HTTP/1.1\r\nHost: x\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    [
      'an absolute URI that is not a URL',
      'GET http://[zz/ HTTP/1.1\r\nHost: x\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    ['CONNECT without a port', 'CONNECT 127.0.0.1 HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['CONNECT to port 0', 'CONNECT 127.0.0.1:0 HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 /],
    [
      'CONNECT to a port above 65535',
      'CONNECT 127.0.0.1:99999 HTTP/1.1\r\nHost: x\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    [
      'a bad header line',
      'GET http://127.0.0.1/ HTTP/1.1\r\nBad Header\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    [
      'conflicting lengths',
      'POST http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
      /^HTTP\/1\.1 400 /,
    ],
    [
      'a head larger than the limit',
      `GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      /^HTTP\/1\.1 431 /,
    ],
  ];
  for (const [name, raw, want] of cases) {
    it(name, async () => {
      const answer = await rawExchange(ADDRESS, proxy.port, raw, { localAddress: '127.0.0.1' });
      expect(answer).toMatch(want);
    });
  }

  it('still serves after all of them', async () => {
    const res = await viaProxy(proxy, `http://127.0.0.1:${origin.port}/after`);
    expect(res.status).toBe(200);
    expect(proxy.child.exitCode).toBeNull();
  });

  it('answers 502 when the origin refuses the connection', async () => {
    const closed = await freePort('127.0.0.1');
    expect((await viaProxy(proxy, `http://127.0.0.1:${closed}/`)).status).toBe(502);
    const t = await tunnel(proxy, `127.0.0.1:${closed}`);
    expect(t.status).toBe(502);
    t.socket.destroy();
  });
});

describe('slow and half-closed peers', () => {
  it('a client that sends its head too slowly gets 408 and is disconnected', async () => {
    // A proxy of its own with a short head timeout: the other tests' requests never meet it.
    const address = '127.0.4.14';
    const p = await startProgram({
      address,
      port: await freePort(address),
      limits: { headersTimeoutMs: 1_000 },
    });
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect({ host: address, port: p.port, localAddress: '127.0.0.1' });
        let out = '';
        s.setEncoding('utf8');
        s.on('data', (d: string) => {
          out += d;
        });
        s.on('error', reject);
        s.on('close', () => resolve(out));
        s.write('GET http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n'); // never finished
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await stopProgram(p);
    }
  });

  it('a client half-close travels through a tunnel and the answer still comes back', async () => {
    // An origin that answers only after the client has finished sending.
    const origin2 = createTcpServer({ allowHalfOpen: true }, (s) => {
      let n = 0;
      s.on('data', (c: Buffer) => {
        n += c.length;
      });
      s.on('end', () => s.end(`got ${n} bytes`));
    });
    const port = await listen(origin2);
    try {
      const { status, socket } = await tunnel(proxy, `127.0.0.1:${port}`);
      expect(status).toBe(200);
      const reply = await new Promise<string>((resolve, reject) => {
        let out = '';
        socket.setEncoding('utf8');
        socket.on('data', (d: string) => {
          out += d;
        });
        socket.on('end', () => resolve(out));
        socket.on('error', reject);
        socket.end('x'.repeat(100_000));
      });
      expect(reply).toBe('got 100000 bytes');
    } finally {
      origin2.close();
    }
  });

  it('an origin half-close reaches the client, which can still send', async () => {
    const origin3 = createTcpServer({ allowHalfOpen: true }, (s) => {
      s.end('hello then FIN');
      let n = 0;
      s.on('data', (c: Buffer) => {
        n += c.length;
      });
      s.on('end', () => {
        got = n;
      });
    });
    let got = -1;
    const port = await listen(origin3);
    try {
      const { socket } = await rawTunnel(proxy, `127.0.0.1:${port}`);
      const first = await new Promise<string>((resolve) => {
        let out = '';
        socket.setEncoding('utf8');
        socket.on('data', (d: string) => {
          out += d;
        });
        socket.once('end', () => resolve(out));
        socket.resume();
      });
      expect(first).toBe('hello then FIN');
      socket.end('late bytes');
      expect(await eventually(() => got === 10)).toBe(true);
    } finally {
      origin3.close();
    }
  });

  it('a slow reader holds the tunnel by backpressure, not by proxy memory', async () => {
    const total = 64 * 1024 * 1024;
    const big = createTcpServer((s) => {
      s.on('error', () => {});
      const chunk = Buffer.alloc(64 * 1024, 7);
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          sent += chunk.length;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
        s.end();
      };
      pump();
    });
    const port = await listen(big);
    try {
      const rssBefore = rssKb(proxy.pid);
      const { socket } = await tunnel(proxy, `127.0.0.1:${port}`);
      socket.pause();
      await new Promise((r) => setTimeout(r, 1_000)); // the client reads nothing meanwhile
      const rssStalled = rssKb(proxy.pid);
      let received = 0;
      await new Promise<void>((resolve) => {
        socket.on('data', (c: Buffer) => {
          received += c.length;
        });
        socket.on('end', () => resolve());
        socket.resume();
      });
      expect(received).toBe(total);
      // Far less than the 64 MiB the origin wanted to send while the client was stalled.
      expect(rssStalled - rssBefore).toBeLessThan(32 * 1024);
    } finally {
      big.close();
    }
  }, 60_000);
});

describe('limits and shutdown', () => {
  it('closes connections beyond maxConnections and serves again once they go', async () => {
    const address = '127.0.4.11';
    const small = await startProgram({
      address,
      port: await freePort(address),
      limits: { maxConnections: 3 },
    });
    try {
      // Three connections, each answered once and kept open: the proxy has taken all three.
      const open = await Promise.all(
        [0, 1, 2].map(
          () =>
            new Promise<ReturnType<typeof connect>>((resolve, reject) => {
              const s = connect({ host: address, port: small.port });
              let out = '';
              s.setEncoding('latin1');
              s.on('data', (d: string) => {
                out += d;
                if (out.endsWith('\r\n\r\nok\n')) resolve(s);
              });
              s.on('error', reject);
              s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
            }),
        ),
      );
      const withThree = fdCount(small.pid);
      const fourth = await rawExchange(address, small.port, 'GET /healthz HTTP/1.1\r\n\r\n');
      expect(['', '<reset>']).toContain(fourth); // closed without an answer
      for (const s of open) s.destroy();
      // The proxy has let them go once it holds three descriptors fewer.
      expect(await eventually(() => fdCount(small.pid) <= withThree - 3)).toBe(true);
      expect((await viaProxy(small, `http://127.0.0.1:${origin.port}/`)).status).toBe(200);
    } finally {
      await stopProgram(small);
    }
  });

  it('on SIGTERM it stops accepting, finishes the request in flight, logs it and exits 0', async () => {
    const address = '127.0.4.12';
    const p = await startProgram({ address, port: await freePort(address) });
    // An origin that holds its answer until told: the request is in flight for as long as the
    // test needs, however slowly a loaded machine runs.
    let arrived!: () => void;
    const atOrigin = new Promise<void>((r) => {
      arrived = r;
    });
    let answer!: () => void;
    const answered = new Promise<void>((r) => {
      answer = r;
    });
    const holding = createHttpServer((req, res) => {
      req.resume();
      arrived();
      void answered.then(() => res.end('done'));
    });
    const port = await listen(holding);
    try {
      const inFlight = viaProxy(p, `http://127.0.0.1:${port}/slow`);
      await atOrigin;
      p.child.kill('SIGTERM');
      // New connections are refused once the proxy has handled the signal (tried until then: a
      // loaded machine may run it late). An attempt whose handshake was under way as the
      // listener closed is reset by the kernel (ECONNRESET): it raced the close, and says
      // nothing yet; the next attempt finds the port closed.
      const attempt = () =>
        new Promise<string>((resolve) => {
          const s = connect({ host: address, port: p.port });
          s.on('connect', () => {
            s.destroy();
            resolve('connected');
          });
          s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
        });
      let refused = await attempt();
      const deadline = Date.now() + 30_000;
      while ((refused === 'connected' || refused === 'ECONNRESET') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        refused = await attempt();
      }
      expect(refused).toBe('ECONNREFUSED');
      expect(p.child.exitCode).toBeNull(); // still serving the request in flight
      answer();
      expect(await inFlight).toEqual({ status: 200, body: 'done' });
      expect(await p.exited).toBe(0);
      const log = await readFile(p.accessLog, 'utf8');
      expect(log).toContain('/slow');
    } finally {
      answer();
      holding.close();
      await stopProgram(p);
    }
  });

  it('on SIGTERM it cuts a tunnel that outlives the grace period', async () => {
    const address = '127.0.4.13';
    const p = await startProgram({
      address,
      port: await freePort(address),
      limits: { shutdownGraceMs: 300 },
    });
    const { socket } = await tunnel(p, `127.0.0.1:${echo.port}`);
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('error', () => {});
    p.child.kill('SIGTERM');
    await closed;
    expect(await p.exited).toBe(0);
    await stopProgram(p);
  });
});
