// Proxy start time through the provider: Create (which returns once the proxy answers) until Get
// says Running, for five proxies one after another, each deleted again. The proxy's own traffic
// benchmark, side by side with Squid, is `npm run bench` in @proxy-op/forward-proxy.
//
// Run with `npm run bench` (after `npm run build`). Everything stays on 127.0.0.0/8 and every
// proxy started is deleted at the end. BENCH_SMOKE=1 is the smoke run CI makes (two proxies, only
// to show the benchmark runs and measures).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider } from '@proxy-op/contract';
import { providerModule } from '@proxy-op/provider-local';

const N = process.env.BENCH_SMOKE === '1' ? 2 : 5;
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);

const stateDir = mkdtempSync(join(tmpdir(), 'provider-local-bench-'));
const provider = await createProvider(
  providerModule,
  'bench',
  { stateDir, addressRange: '127.0.211.0/24' },
  {},
);
const base = {
  namespace: 'bench',
  port: 3128,
  cloudInit: new Uint8Array(),
  allowedSources: ['127.0.0.0/8'],
  placement: {},
};

try {
  const starts: number[] = [];
  for (let i = 0; i < N; i++) {
    part(`start bench-start-${i}`);
    const t0 = performance.now();
    const id = await provider.create({ ...base, name: `bench-start-${i}`, uid: `bench-${i}` });
    const inst = await provider.get(id);
    if (inst.state !== 'Running') throw new Error(`bench-start-${i} is ${inst.state}`);
    starts.push(performance.now() - t0);
    await provider.delete(id);
  }
  starts.sort((a, b) => a - b);
  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3));
  const median = starts[Math.floor(starts.length / 2)] ?? Number.NaN;
  console.log(`node ${process.version}; ${N} proxies, one after another\n`);
  console.log('| measure | median | min | max |');
  console.log('|---|---:|---:|---:|');
  console.log(
    `| start time, Create to Running | ${fmt(median)} ms | ${fmt(starts[0] ?? Number.NaN)} ms | ${fmt(starts.at(-1) ?? Number.NaN)} ms |`,
  );
} finally {
  for (const i of await provider.listByTag()) await provider.delete(i.id);
  rmSync(stateDir, { recursive: true, force: true });
}
