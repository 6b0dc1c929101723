// Peer: the proxy program spawned as a child process, a TCP echo origin on 127.0.0.1 and many
// raw clients: concurrent CONNECT tunnels, bounded in count and time, nothing leaked.
import type { Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllSpawned } from './fixture.js';
import {
  eventually,
  fdCount,
  freePort,
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
  proxy = await startProgram({ address: ADDRESS, port: await freePort(ADDRESS) });
}, 30_000);

afterAll(async () => {
  echo?.server.close();
  await stopProgram(proxy);
  await killAllSpawned();
});

async function roundTrip(payload: Buffer): Promise<number> {
  const { status, socket } = await rawTunnel(proxy, `127.0.0.1:${echo.port}`);
  if (status !== 200) throw new Error(`CONNECT answered ${status}`);
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
    await roundTrip(payload); // warm up
    await new Promise((r) => setTimeout(r, 200));
    const proxyFds = fdCount(proxy.pid);
    const ownFds = fdCount(process.pid);
    const rssBefore = rssKb(proxy.pid);
    const t0 = performance.now();
    let peakFds = proxyFds;
    const sampler = setInterval(() => {
      peakFds = Math.max(peakFds, fdCount(proxy.pid));
    }, 20);
    const results = await Promise.all(Array.from({ length: TUNNELS }, () => roundTrip(payload)));
    clearInterval(sampler);
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
