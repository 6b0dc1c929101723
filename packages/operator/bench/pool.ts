// Benchmark: a 1,000-replica ProxyPool with the instant (reference in-memory) provider, made and
// then rolled once by a template change (maxSurge 10%, maxUnavailable 0), over the memory stores,
// beside the same number of plain Proxies. Reports time to converge, the writes each replaced
// Proxy costs (Proxy status writes, pool status writes, creates, deletes) and the operator's heap
// per Proxy. Run with `npm run bench` (after `npm run build`); each case runs in its own process.
// PROXY_OP_POOL_BENCH_N sets N; BENCH_SMOKE=1 is the smoke run CI makes (50 replicas), only to show
// the benchmark runs and measures.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MemoryBackend, providerModule } from '@proxy-op/providertest/reference';
import {
  MemoryPoolStore,
  MemoryStore,
  Operator,
  ProviderRegistry,
  ProviderSet,
  parseProvidersConfig,
  validatePoolSpec,
  validateProxySpec,
} from '../dist/index.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const N = Number(process.env.PROXY_OP_POOL_BENCH_N ?? (SMOKE ? 50 : 1000));
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: pool: ${name}…\n`);
const TEMPLATE = {
  provider: 'lab',
  placement: { machineType: 'small', image: 'debian-13' },
  allowedSources: ['10.0.0.0/8'],
};

interface Result {
  case: 'plain' | 'pool';
  n: number;
  upMs: number;
  rollMs?: number | undefined;
  writesPerReplaced?: Record<string, number> | undefined;
  heapPerProxyKiB: number;
}

/**
 * Waits until `done` holds; a run that stops converging fails after `ms` (a minute, or more for a
 * large N), saying where it stood, instead of waiting silently.
 */
async function settle(
  done: () => boolean,
  where: () => string,
  ms = 60_000 + N * 120,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline)
      throw new Error(`no convergence in ${(ms / 1000).toFixed(0)} s: ${where()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function run(kind: 'plain' | 'pool'): Promise<Result> {
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
  const providers = new ProviderSet();
  await providers.apply(load.config);
  globalThis.gc?.();
  const baseHeap = process.memoryUsage().heapUsed;
  const counts = { proxyStatus: 0, poolStatus: 0, creates: 0, deletes: 0 };
  class CountingStore extends MemoryStore {
    override updateStatus(...a: Parameters<MemoryStore['updateStatus']>) {
      counts.proxyStatus++;
      return super.updateStatus(...a);
    }
  }
  const store = new CountingStore();
  class CountingPools extends MemoryPoolStore {
    override updatePoolStatus(...a: Parameters<MemoryPoolStore['updatePoolStatus']>) {
      counts.poolStatus++;
      return super.updatePoolStatus(...a);
    }
    override createProxy(...a: Parameters<MemoryPoolStore['createProxy']>) {
      counts.creates++;
      return super.createProxy(...a);
    }
    override deleteProxy(...a: Parameters<MemoryPoolStore['deleteProxy']>) {
      counts.deletes++;
      return super.deleteProxy(...a);
    }
  }
  const pools = new CountingPools(store);
  const operator = new Operator({
    store,
    pools,
    providers,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 0,
      probeIntervalMs: 0,
      readyResyncMs: 3_600_000,
    },
  });
  operator.start();
  const ready = () => store.list().filter((p) => p.status.phase === 'Ready').length;
  const poolWhere = () =>
    `pool status ${JSON.stringify({ ...pools.getPool('default/pool')?.status, endpoints: undefined })}, ` +
    `${store.list().length} Proxies, ${ready()} Ready, operator settled: ${operator.settled()}`;
  const t0 = performance.now();
  const spec = (port: number) => {
    const v = validatePoolSpec({
      replicas: N,
      strategy: { maxSurge: '10%', maxUnavailable: 0 },
      template: { spec: { ...TEMPLATE, port } },
    });
    if (!v.ok) throw new Error(JSON.stringify(v.problems));
    return v.value;
  };
  if (kind === 'plain') {
    const v = validateProxySpec(TEMPLATE);
    if (!v.ok) throw new Error('spec');
    for (let i = 0; i < N; i++) store.apply('default', `p${i}`, v.value);
    await settle(
      () => ready() === N && operator.settled(),
      () => `${ready()} of ${N} Ready, operator settled: ${operator.settled()}`,
    );
  } else {
    pools.apply('default', 'pool', spec(3128));
    await settle(
      () => pools.getPool('default/pool')?.status.availableReplicas === N && operator.settled(),
      () => poolWhere(),
    );
  }
  const upMs = performance.now() - t0;
  globalThis.gc?.();
  const heapPerProxyKiB = (process.memoryUsage().heapUsed - baseHeap) / N / 1024;
  let rollMs: number | undefined;
  let writesPerReplaced: Record<string, number> | undefined;
  if (kind === 'pool') {
    for (const k of Object.keys(counts) as Array<keyof typeof counts>) counts[k] = 0;
    part('the roll (template change)');
    const t1 = performance.now();
    pools.apply('default', 'pool', spec(8080));
    const generation = pools.getPool('default/pool')?.metadata.generation;
    await settle(() => {
      const st = pools.getPool('default/pool')?.status;
      // The status from before the controller saw the change counts for nothing.
      return (
        st?.observedGeneration === generation &&
        st?.updatedReplicas === N &&
        st.availableReplicas === N &&
        store.list().length === N &&
        operator.settled()
      );
    }, poolWhere);
    rollMs = performance.now() - t1;
    // A roll that replaced nothing measured nothing.
    if (counts.creates < N || counts.deletes < N)
      throw new Error(
        `the roll made ${counts.creates} creates and ${counts.deletes} deletes for ${N}`,
      );
    writesPerReplaced = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / N]));
  }
  await operator.stop();
  await providers.close();
  return { case: kind, n: N, upMs, rollMs, writesPerReplaced, heapPerProxyKiB };
}

const arg = process.argv[2];
if (arg === 'plain' || arg === 'pool') {
  process.stdout.write(`${JSON.stringify(await run(arg))}\n`);
} else {
  const self = fileURLToPath(import.meta.url);
  const rows: Result[] = [];
  for (const c of ['plain', 'pool']) {
    part(`${N} Proxies, ${c}`);
    // The child's stderr is this process's, so its part lines show as they come.
    const r = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, self, c], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`${c} failed (its stderr is above)`);
    rows.push(JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as Result);
  }
  const f = (x: number | undefined, d = 0) => (x === undefined ? '-' : x.toFixed(d));
  console.log(
    `${N} Proxies, plain and as one ProxyPool (reference in-memory provider, probes off)\n`,
  );
  console.log('| case | to Ready | roll (template change) | heap per Proxy |');
  console.log('|---|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.case} | ${f(r.upMs)} ms | ${f(r.rollMs)} ms | ${f(r.heapPerProxyKiB, 1)} KiB |`,
    );
  }
  const w = rows.find((r) => r.case === 'pool')?.writesPerReplaced;
  if (w !== undefined) {
    console.log('\nper replaced Proxy in the roll:\n');
    console.log('| writes | per replaced Proxy |');
    console.log('|---|---:|');
    console.log(`| Proxy status writes | ${f(w.proxyStatus, 1)} |`);
    console.log(`| pool status writes | ${f(w.poolStatus, 2)} |`);
    console.log(`| creates | ${f(w.creates, 2)} |`);
    console.log(`| deletes | ${f(w.deletes, 2)} |`);
  }
}
