// Peer: the proxy program spawned as a child process, a TCP echo origin and node:http origins on
// 127.0.0.1, and many raw and node:http clients: concurrent CONNECT tunnels and forwarded
// requests, bounded in count and time, nothing leaked.
import { createServer as createHttpServer, request } from 'node:http';
import type { Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  fdCount,
  freePort,
  killAllSpawned,
  listen,
  type RunningProxy,
  rawTunnel,
  rssKb,
  startEcho,
  startProgram,
  stopProgram,
} from './support.js';

const ADDRESS = '127.0.4.20';
const TUNNELS = 400;
const BYTES = 64 * 1024;

let echo: { server: Server; port: number };
let proxy: RunningProxy;

beforeAll(async () => {
  echo = await startEcho();
  // Every client connection comes from one address here: the bound per source (256) is lifted
  // to the total, which is what this load is about (front-door tests the bound per source).
  proxy = await startProgram({
    address: ADDRESS,
    port: await freePort(ADDRESS),
    limits: { maxConnectionsPerSource: 1024 },
  });
}, 30_000);

afterAll(async () => {
  echo?.server.close();
  await stopProgram(proxy);
  await killAllSpawned();
});

/** The proxy's descriptors, counted each time a tunnel has just opened. */
let peakFds = 0;

async function roundTrip(payload: Buffer): Promise<number> {
  const { status, socket } = await rawTunnel(proxy, `127.0.0.1:${echo.port}`);
  if (status !== 200) throw new Error(`CONNECT answered ${status}`);
  peakFds = Math.max(peakFds, fdCount(proxy.pid));
  return new Promise<number>((resolve, reject) => {
    let n = 0;
    socket.on('data', (c: Buffer) => {
      n += c.length;
    });
    socket.on('end', () => {
      socket.end();
      resolve(n);
    });
    socket.on('error', reject);
    socket.resume();
    socket.end(payload); // half-close: the echo answers everything, then ends
  });
}

describe(`${TUNNELS} concurrent CONNECT tunnels through one proxy`, () => {
  it('all carry their bytes both ways, and every descriptor and connection is released', async () => {
    const payload = Buffer.alloc(BYTES, 0x61);
    const idleFds = fdCount(proxy.pid);
    await roundTrip(payload); // warm up; its descriptors go again
    expect(await eventually(() => fdCount(proxy.pid) <= idleFds)).toBe(true);
    const proxyFds = fdCount(proxy.pid);
    const ownFds = fdCount(process.pid);
    const rssBefore = rssKb(proxy.pid);
    const t0 = performance.now();
    peakFds = proxyFds;
    const results = await Promise.all(Array.from({ length: TUNNELS }, () => roundTrip(payload)));
    const ms = performance.now() - t0;
    const rssPeak = rssKb(proxy.pid);
    expect(results).toEqual(Array.from({ length: TUNNELS }, () => BYTES));
    // Back to the baseline: no socket left open in the proxy or in this process.
    const proxyBack = await eventually(() => fdCount(proxy.pid) <= proxyFds);
    const ownBack = await eventually(() => fdCount(process.pid) <= ownFds);
    console.log(
      `load: ${TUNNELS} tunnels x ${BYTES} B each way in ${Math.round(ms)} ms; ` +
        `proxy fds ${proxyFds} -> peak ${peakFds} -> ${fdCount(proxy.pid)}; ` +
        `proxy RSS ${rssBefore} kB -> ${rssPeak} kB`,
    );
    expect(proxyBack, `proxy fds back to ${proxyFds}, now ${fdCount(proxy.pid)}`).toBe(true);
    expect(ownBack, `test fds back to ${ownFds}, now ${fdCount(process.pid)}`).toBe(true);
    expect(peakFds).toBeGreaterThan(proxyFds); // the tunnels really ran at once
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);
});

const REQUESTS = 300;

describe(`${REQUESTS} concurrent forwarded requests to two origins through one proxy`, () => {
  let http: RunningProxy;
  let peak = 0;
  let openAtOrigins = 0;
  /** When each origin connection last answered, and the longest any then stayed open. */
  const answeredAt = new WeakMap<Socket, number>();
  let longestIdle = 0;
  const origins: ReturnType<typeof createHttpServer>[] = [];
  const ports: number[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const o = createHttpServer((req, res) => {
        // Counted while the request is held: its client and origin connections are open.
        peak = Math.max(peak, fdCount(http.pid));
        res.writeHead(200, { 'content-length': 2 });
        res.end('ok');
        answeredAt.set(req.socket, performance.now());
        req.resume();
      });
      o.on('connection', (s: Socket) => {
        openAtOrigins++;
        s.on('close', () => {
          openAtOrigins--;
          longestIdle = Math.max(longestIdle, performance.now() - (answeredAt.get(s) ?? 0));
        });
      });
      // Origins keep idle connections for long: only the proxy's originIdleMs closes them.
      o.keepAliveTimeout = 60_000;
      origins.push(o);
      ports.push(await listen(o));
    }
    const address = '127.0.4.21';
    http = await startProgram({
      address,
      port: await freePort(address),
      limits: { originIdleMs: 300, maxConnectionsPerSource: 1024 },
    });
  }, 30_000);

  afterAll(async () => {
    await stopProgram(http);
    for (const o of origins) o.close();
  });

  const get = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const req = request({
        host: http.address,
        port: http.port,
        path: `http://127.0.0.1:${port}/`,
        agent: false,
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });

  it('all are answered, and the connections to clients and origins are all released', async () => {
    const idleFds = fdCount(http.pid);
    await get(ports[0] ?? 0); // warm up; its origin connection goes idle, then closes
    expect(await eventually(() => openAtOrigins === 0)).toBe(true);
    expect(await eventually(() => fdCount(http.pid) <= idleFds)).toBe(true);
    const proxyFds = fdCount(http.pid);
    const ownFds = fdCount(process.pid);
    peak = proxyFds;
    longestIdle = 0;
    const statuses = await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) => get(ports[i % 2] ?? 0)),
    );
    expect(statuses).toEqual(Array.from({ length: REQUESTS }, () => 200));
    // Idle origin connections close after originIdleMs; client connections as they end.
    const originsBack = await eventually(() => openAtOrigins === 0);
    const proxyBack = await eventually(() => fdCount(http.pid) <= proxyFds);
    const ownBack = await eventually(() => fdCount(process.pid) <= ownFds);
    expect(originsBack, `origin connections open: ${openAtOrigins}`).toBe(true);
    expect(proxyBack, `proxy fds back to ${proxyFds}, now ${fdCount(http.pid)}`).toBe(true);
    expect(ownBack, `test fds back to ${ownFds}, now ${fdCount(process.pid)}`).toBe(true);
    // Kept open while idle, not closed as each answer ended: a connection closed at least
    // originIdleMs (300) after its last answer (a bound no slow machine can break).
    expect(longestIdle).toBeGreaterThanOrEqual(300);
    expect(peak).toBeGreaterThan(proxyFds);
    expect(http.child.exitCode).toBeNull();
  }, 60_000);
});
