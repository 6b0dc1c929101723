// Benchmark: N Proxies from manifests to Ready with the instant (reference in-memory) provider,
// through the standalone store, the work queue (3 workers) and the reconciler.
// Run with `npm run bench` (after `npm run build`). Each N runs in a fresh child process.
// BENCH_SMOKE=1 is the smoke run CI makes (20 and 100 Proxies), only to show the benchmark runs
// and measures.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, providerModule } from '@proxy-op/providertest/reference';
import {
  Operator,
  ProviderRegistry,
  ProviderSet,
  parseProvidersConfig,
  StandaloneStore,
} from '../dist/index.js';

const SIZES = process.env.BENCH_SMOKE === '1' ? [20, 100] : [100, 1000, 10_000];
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: standalone: ${name}…\n`);

interface Result {
  n: number;
  scanMs: number;
  readyMs: number;
  totalMs: number;
  peakRssMiB: number;
  baseRssMiB: number;
  heapPerProxyKiB: number;
}

async function one(n: number): Promise<Result> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-bench-'));
  const dir = join(root, 'proxies');
  await mkdir(dir);
  for (let i = 0; i < n; i++) {
    await writeFile(
      join(dir, `p${i}.yaml`),
      `apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: p${i}\nspec:\n  provider: lab\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n`,
    );
  }
  const backend = new MemoryBackend({ token: 'bench' });
  const registry = new ProviderRegistry().register(providerModule, () => ({
    backend,
    credential: () => 'bench',
  }));
  const load = await parseProvidersConfig(
    'providers:\n  - name: lab\n    type: memory\n',
    registry,
  );
  if (!load.ok) throw new Error(load.problems.join('\n'));
  globalThis.gc?.();
  const baseRss = process.memoryUsage().rss;
  const baseHeap = process.memoryUsage().heapUsed;
  let peakRss = baseRss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 5);
  const t0 = performance.now();
  const store = await StandaloneStore.open({ dir, watch: false });
  const t1 = performance.now();
  const operator = new Operator({
    store,
    providers: new ProviderSet(),
    settings: { gcIntervalMs: 0, healthIntervalMs: 0, readyResyncMs: 3_600_000 },
  });
  await operator.applyProviders(load.config);
  operator.start();
  while (!operator.settled()) await new Promise((r) => setTimeout(r, 20));
  const t2 = performance.now();
  await store.flush();
  const t3 = performance.now();
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  // What the Proxies keep, not what awaits collection: the heap after a full GC.
  globalThis.gc?.();
  const heap = process.memoryUsage().heapUsed - baseHeap;
  const ready = store.list().filter((p) => p.status.phase === 'Ready').length;
  if (ready !== n || backend.vms.size !== n) throw new Error(`only ${ready}/${n} Ready`);
  await operator.stop();
  await store.close();
  await rm(root, { recursive: true, force: true });
  return {
    n,
    scanMs: t1 - t0,
    readyMs: t2 - t1,
    totalMs: t3 - t0,
    peakRssMiB: peakRss / 2 ** 20,
    baseRssMiB: baseRss / 2 ** 20,
    heapPerProxyKiB: heap / n / 1024,
  };
}

const arg = process.argv[2];
if (arg !== undefined) {
  process.stdout.write(`${JSON.stringify(await one(Number(arg)))}\n`);
} else {
  const self = fileURLToPath(import.meta.url);
  const rows: Result[] = [];
  for (const n of SIZES) {
    part(`${n} Proxies to Ready`);
    const r = spawnSync(process.execPath, ['--expose-gc', self, String(n)], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    if (r.status !== 0) throw new Error(`N=${n} failed:\n${r.stderr}`);
    rows.push(JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as Result);
  }
  const f = (x: number, d = 0) => x.toFixed(d);
  console.log('N Proxies from manifests to Ready (reference in-memory provider, 3 workers)\n');
  console.log(
    '| N | scan | to Ready | total | Proxies/s | per Proxy | peak RSS | RSS growth | heap kept per Proxy (after GC) |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.n} | ${f(r.scanMs)} ms | ${f(r.readyMs)} ms | ${f(r.totalMs)} ms | ${f((r.n / r.totalMs) * 1000)} | ${f((r.totalMs / r.n) * 1000)} µs | ${f(r.peakRssMiB)} MiB | ${f(r.peakRssMiB - r.baseRssMiB)} MiB | ${f(r.heapPerProxyKiB, 1)} KiB |`,
    );
  }
  const a = rows[0];
  const b = rows.at(-1);
  if (a && b) {
    console.log(
      `\nfrom N=${a.n} to N=${b.n} (x${b.n / a.n}): time x${f(b.totalMs / a.totalMs, 1)}, RSS growth x${f((b.peakRssMiB - b.baseRssMiB) / Math.max(1, a.peakRssMiB - a.baseRssMiB), 1)}`,
    );
  }
}
