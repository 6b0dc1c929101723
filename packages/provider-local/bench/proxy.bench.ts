// Throughput and latency through one local proxy against a direct connection to the same
// origin on 127.0.0.1, side by side in one run, and proxy start time from Create to Running.
// Run with `npm run bench` (after `npm run build`); BENCH_SCALE (default 1) scales the request
// counts. Everything stays on 127.0.0.0/8 and every process started is deleted at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider } from '@proxy-op/contract';
import { providerModule } from '@proxy-op/provider-local';

const scale = Number(process.env.BENCH_SCALE ?? 1);
const BIG = Buffer.alloc(1024 * 1024, 0x62);

const origin = createServer((req, res) => {
  if (req.url === '/big') {
    res.writeHead(200, { 'content-length': BIG.length });
    res.end(BIG);
  } else {
    res.writeHead(200, { 'content-length': 2 });
    res.end('ok');
  }
});
await new Promise<void>((r) => origin.listen({ host: '127.0.0.1', port: 0 }, r));
const originPort = (origin.address() as { port: number }).port;

interface Target {
  readonly host: string;
  readonly port: number;
  path(p: string): string;
}
const direct: Target = { host: '127.0.0.1', port: originPort, path: (p) => p };

function get(agent: Agent, t: Target, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: t.host, port: t.port, path: t.path(p) }, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
      });
      res.on('end', () => resolve(n));
    });
    req.on('error', reject);
    req.end();
  });
}

async function latency(t: Target, n: number): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await get(agent, t, '/small');
    times.push(performance.now() - t0);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

async function throughput(
  t: Target,
  p: string,
  total: number,
  concurrency: number,
): Promise<{ perSec: number; mbPerSec: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        bytes += await get(agent, t, p);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  agent.destroy();
  return { perSec: total / s, mbPerSec: bytes / 1024 / 1024 / s };
}

const stateDir = mkdtempSync(join(tmpdir(), 'provider-local-bench-'));
const provider = await createProvider(
  providerModule,
  'bench',
  { stateDir, addressRange: '127.0.5.0/24' },
  {},
);
const base = {
  namespace: 'bench',
  port: 3128,
  cloudInit: new TextEncoder().encode('acl proxy_op_allowed src 127.0.0.0/8\n'),
  placement: {},
};

try {
  // Start time: Create (which returns once the proxy answers) until Get says Running.
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const id = await provider.create({ ...base, name: `bench-start-${i}`, uid: `bench-${i}` });
    const inst = await provider.get(id);
    if (inst.state !== 'Running') throw new Error(`bench-start-${i} is ${inst.state}`);
    starts.push(performance.now() - t0);
    await provider.delete(id);
  }
  starts.sort((a, b) => a - b);

  const id = await provider.create({ ...base, name: 'bench-traffic', uid: 'bench-traffic' });
  const inst = await provider.get(id);
  const proxied: Target = {
    host: inst.ip as string,
    port: 3128,
    path: (p) => `http://127.0.0.1:${originPort}${p}`,
  };

  // Warm both paths, then measure them one after the other.
  await throughput(direct, '/small', 500, 8);
  await throughput(proxied, '/small', 500, 8);
  const rows: [string, number, number, string][] = [];
  const pair = async (label: string, unit: string, run: (t: Target) => Promise<number>) => {
    const d = await run(direct);
    const p = await run(proxied);
    rows.push([label, d, p, unit]);
  };
  await pair(
    'small GETs, 32 concurrent',
    'req/s',
    async (t) => (await throughput(t, '/small', Math.round(10_000 * scale), 32)).perSec,
  );
  await pair(
    '1 MiB GETs, 8 concurrent',
    'MiB/s',
    async (t) => (await throughput(t, '/big', Math.round(400 * scale), 8)).mbPerSec,
  );
  const lat = new Map<Target, { p50: number; p99: number }>();
  for (const t of [direct, proxied]) lat.set(t, await latency(t, Math.round(2_000 * scale)));
  rows.push([
    'latency p50, one keep-alive connection',
    lat.get(direct)?.p50 ?? 0,
    lat.get(proxied)?.p50 ?? 0,
    'ms',
  ]);
  rows.push([
    'latency p99, one keep-alive connection',
    lat.get(direct)?.p99 ?? 0,
    lat.get(proxied)?.p99 ?? 0,
    'ms',
  ]);
  await provider.delete(id);

  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3));
  console.log(`node ${process.version}, origin and proxy on loopback\n`);
  console.log('| measure | direct | through the proxy | proxy / direct |');
  console.log('|---|---|---|---|');
  for (const [label, d, p, unit] of rows) {
    console.log(`| ${label} | ${fmt(d)} ${unit} | ${fmt(p)} ${unit} | ${(p / d).toFixed(2)} |`);
  }
  console.log(
    `\nstart time, Create to Running (5 proxies): median ${fmt(starts[2] ?? 0)} ms, ` +
      `min ${fmt(starts[0] ?? 0)} ms, max ${fmt(starts[4] ?? 0)} ms`,
  );
} finally {
  for (const i of await provider.listByTag()) await provider.delete(i.id);
  origin.close();
  rmSync(stateDir, { recursive: true, force: true });
}
