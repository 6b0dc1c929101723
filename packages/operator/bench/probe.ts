// Benchmark: the probes of the data plane. N Proxies (1,000) whose instances are forward
// proxies on their own loopback addresses, as the local provider runs them, taken to Ready by
// the operator and then probed every interval against its own whoami target; beside it, the
// same N Proxies taken to Ready with probing off, which is the reconcile loop's own cost.
//
// The local provider runs one process per proxy (some 40 MiB each): a thousand would not fit on
// the development machine, so the same forward proxy (@proxy-op/forward-proxy, the program each
// local proxy runs) is started N times in one child process, each on its own address and port
// 3128, with its own outgoing address. The operator runs alone in another child process, over a
// memory store, with a provider whose instance i is the proxy at the i-th address.
//
// Run with `npm run bench` (after `npm run build`). BENCH_PROXIES sets N, BENCH_STEADY_MS the
// steady window (default 65 s, two rounds at the default interval); BENCH_SMOKE=1 is the smoke run
// CI makes (10 Proxies, probes every second for 2.5 s), only to show the benchmark runs and
// measures.
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Instance,
  idFormat,
  type ProviderImplementation,
  type ProviderModule,
} from '@proxy-op/contract';
import { type ForwardProxy, startForwardProxy } from '@proxy-op/forward-proxy';
import { profile } from '@proxy-op/providertest/reference';
import { MemoryStore, Operator, ProviderSet, validateProxySpec } from '../dist/index.js';
import { startProbeTarget } from '../dist/probe/target.js';
import type { AnyProviderModule } from '../dist/providers/registry.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const N = Number(process.env.BENCH_PROXIES ?? (SMOKE ? 10 : 1000));
const STEADY_MS = Number(process.env.BENCH_STEADY_MS ?? (SMOKE ? 2_500 : 65_000));
/** The smoke run's probe interval; the full run keeps the default. */
const SMOKE_PROBE_INTERVAL_MS = 1_000;

/** Where the i-th proxy reads its password file (the parent makes the folder). */
const passwordFileOf = (i: number) => join(process.env.BENCH_DIR ?? '.', `p${i}.passwd`);

/**
 * The i-th proxy's address: 127.0.220.1 onwards, 250 per /24 (addresses no test suite uses, so the
 * smoke run can run beside them).
 */
const addressOf = (i: number) => `127.0.${220 + Math.floor(i / 250)}.${1 + (i % 250)}`;

type Msg =
  | { ev: 'listening' }
  | { ev: 'cpu'; userMs: number; systemMs: number }
  | { ev: 'result'; result: Record<string, number> };

const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

// ---- the proxies' child ----

async function proxies(): Promise<void> {
  const all: ForwardProxy[] = [];
  for (let i = 0; i < N; i++) {
    // Empty until the operator's Create writes the Proxy's password file: every credential is
    // refused before then, and only the Proxy's own after.
    await writeFile(passwordFileOf(i), '');
    all.push(
      await startForwardProxy({
        name: `p${i}`,
        address: addressOf(i),
        port: 3128,
        allowedSources: ['127.0.0.0/8'],
        outgoingAddress: addressOf(i),
        auth: { realm: `bench p${i}`, passwordFile: passwordFileOf(i) },
        // The probe target runs on loopback, which the default policy refuses.
        egress: { allow: ['127.0.0.1:1-65535'] },
      }),
    );
  }
  // The handler is in place before the parent hears of it: its first question comes at once.
  process.on('message', async (m: { cmd: string }) => {
    if (m.cmd === 'cpu') {
      const c = process.cpuUsage();
      process.send?.({ ev: 'cpu', userMs: c.user / 1000, systemMs: c.system / 1000 } satisfies Msg);
    } else if (m.cmd === 'stop') {
      await Promise.all(all.map((p) => p.close(0)));
      process.exit(0);
    }
  });
  process.send?.({ ev: 'listening' } satisfies Msg);
}

// ---- the operator's child ----

const ids = idFormat(['bench', ':i'], { i: /^\d+$/ });

/** A provider whose instance `proxy-...-<i>` is the forward proxy at the i-th address. */
const benchModule: ProviderModule<Record<string, unknown>, object, { i: string }> = {
  type: 'bench',
  // The reference's choices, but what this provider does: no updateAuth (credentials change by
  // replacement), not billed, never taken back, no IPv6 ranges.
  profile: {
    ...profile,
    credentialRotation: 'replace',
    billing: 'none',
    preemption: 'never',
    ipv6Egress: 'none',
  },
  configSchema: { '~standard': { version: 1, vendor: 'bench', validate: () => ({ value: {} }) } },
  classify: () => 'Transient',
  create: (): ProviderImplementation<{ i: string }> => {
    const made = new Map<string, { uid: string; at: Date }>();
    return {
      ids,
      lockKey: (id) => id.i,
      create: async (req) => {
        const i = /-(\d+)-[0-9a-f]{8}$/.exec(req.name)?.[1] ?? '0';
        // The Proxy's password file goes where its proxy reads it, as cloud-init would put it.
        if (req.auth !== undefined)
          await writeFile(passwordFileOf(Number(i)), req.auth.passwordFile);
        made.set(i, { uid: req.uid, at: new Date() });
        return ids.format({ i });
      },
      get: async (id): Promise<Instance> => ({
        id: ids.format(id),
        state: 'Running',
        ip: addressOf(Number(id.i)),
        uid: made.get(id.i)?.uid ?? '',
        createdAt: made.get(id.i)?.at ?? new Date(),
      }),
      delete: async (id) => {
        made.delete(id.i);
      },
      list: async () => [],
    };
  },
};

/** TCP sockets this process holds now (a TLS socket on top of one counted once). */
function sockets(): { tcp: number } {
  return { tcp: process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length };
}

async function operatorChild(probing: boolean): Promise<void> {
  const store = new MemoryStore();
  let writes = 0;
  const update = store.updateStatus.bind(store);
  store.updateStatus = (key, status) => {
    writes++;
    return update(key, status);
  };
  const providers = new ProviderSet();
  const applied = await providers.apply({
    installation: 'bench',
    providers: [
      {
        name: 'lab',
        type: 'bench',
        moduleType: 'bench',
        entry: { module: benchModule as unknown as AnyProviderModule },
        block: {},
      },
    ],
  });
  // A provider that does not build would leave every Proxy Pending, and the run silent.
  if (applied.problems.length > 0)
    throw new Error(`bench provider: ${applied.problems.join('; ')}`);
  const target = probing
    ? await startProbeTarget({ listen: '127.0.0.1:0', tlsListen: '127.0.0.1:0' })
    : undefined;
  const operator = new Operator({
    store,
    providers,
    probeTarget: target?.target,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 0,
      readyResyncMs: 3_600_000,
      ...(probing
        ? SMOKE
          ? { probeIntervalMs: SMOKE_PROBE_INTERVAL_MS }
          : {}
        : { probeIntervalMs: 0 }),
    },
  });
  const spec = validateProxySpec({ provider: 'lab', allowedSources: ['127.0.0.0/8'] });
  if (!spec.ok) throw new Error('spec');
  let peak = { tcp: 0 };
  const sample = setInterval(() => {
    peak = { tcp: Math.max(peak.tcp, sockets().tcp) };
  }, 25);
  const base = sockets();
  const cpu0 = cpuMs();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) store.apply('bench', `p-${i}`, spec.value);
  operator.start();
  let firstRoundMs = 0;
  const keys = store.list().map((p) => `bench/${p.metadata.name}`);
  for (;;) {
    if (probing && firstRoundMs === 0) {
      const probed = keys.every((k) => operator.probes?.latest(k)?.last !== undefined);
      if (probed) firstRoundMs = performance.now() - t0;
    }
    if (store.list().filter((p) => p.status.phase === 'Ready').length === N) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const readyMs = performance.now() - t0;
  const readyCpu = cpuMs() - cpu0;
  const readyWrites = writes;
  const result: Record<string, number> = {
    readyMs,
    firstRoundMs: firstRoundMs || readyMs,
    readyCpuMs: readyCpu,
    readyWrites,
    peakInFlight: operator.probes?.stats().peakInFlight ?? 0,
    peakTcp: peak.tcp - base.tcp,
  };
  if (probing) {
    // Steady state: nothing changes; every Proxy is probed every interval (with jitter).
    writes = 0;
    peak = { tcp: 0 };
    process.send?.({ ev: 'steady' });
    const p0 = operator.probes?.stats().probes ?? 0;
    const c0 = cpuMs();
    await new Promise((r) => setTimeout(r, STEADY_MS));
    const probes = (operator.probes?.stats().probes ?? 0) - p0;
    result.steadyProbes = probes;
    result.steadyCpuMs = cpuMs() - c0;
    result.steadyWrites = writes;
    result.steadyPeakTcp = peak.tcp - base.tcp;
    result.passing = store.list().filter((p) => p.status.phase === 'Ready').length;
  }
  clearInterval(sample);
  await operator.stop();
  await target?.close();
  process.send?.({ ev: 'result', result } satisfies Msg);
}

// ---- the parent ----

function child(args: string[]) {
  // BENCH_CPU_PROF=DIR writes a CPU profile of the operator's child into DIR.
  const prof = process.env.BENCH_CPU_PROF;
  const execArgv =
    prof !== undefined && args[0] === 'operator' ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  return fork(fileURLToPath(import.meta.url), args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv,
  });
}

function next<T extends Msg['ev'] | 'steady'>(
  c: ReturnType<typeof child>,
  ev: T,
): Promise<Record<string, unknown>> {
  // A child that exits before it answers fails the run instead of leaving it waiting.
  return new Promise((resolve, reject) => {
    const exited = (code: number | null) =>
      reject(new Error(`the ${c.spawnargs.at(-1)} child exited with ${code} before "${ev}"`));
    const on = (m: Record<string, unknown>) => {
      if (m.ev === ev) {
        c.off('message', on);
        c.off('exit', exited);
        resolve(m);
      }
    };
    c.on('message', on);
    c.once('exit', exited);
  });
}

/** A line on stderr as each part starts, so a run that stalls says where. */
const part = (what: string) => console.error(`bench: probe: ${what}…`);

async function parent(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'probe-bench-'));
  process.env.BENCH_DIR = dir;
  part(`starting ${N} forward proxies`);
  const px = child(['proxies']);
  await next(px, 'listening');
  const proxyCpu = async () => {
    px.send({ cmd: 'cpu' });
    const m = await next(px, 'cpu');
    return (m.userMs as number) + (m.systemMs as number);
  };
  const runs: Record<string, Record<string, number>> = {};
  for (const mode of ['off', 'on'] as const) {
    part(`the operator with probing ${mode}: ${N} Proxies to Ready`);
    const op = child(['operator', mode]);
    const before = await proxyCpu();
    const steady = mode === 'on' ? next(op, 'steady') : undefined;
    let proxiesAtSteady = before;
    if (steady !== undefined)
      void steady.then(async () => {
        part(`steady state for ${STEADY_MS / 1000} s`);
        proxiesAtSteady = await proxyCpu();
      });
    const r = (await next(op, 'result')).result as Record<string, number>;
    const after = await proxyCpu();
    r.proxiesCpuMs = after - (mode === 'on' ? proxiesAtSteady : before);
    runs[mode] = r;
  }
  px.send({ cmd: 'stop' });
  await rm(dir, { recursive: true, force: true });
  const off = runs.off ?? {};
  const on = runs.on ?? {};
  const f = (x: number | undefined, d = 0) =>
    x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d);
  /** A count, `none` when it was measured and came out zero. */
  const count0 = (x: number | undefined) => (x === 0 ? 'none' : f(x));
  const load = (await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(
    `\n${N} Proxies, each a forward proxy on its own loopback address (one process for all)`,
  );
  console.log(
    `(the operator alone in a child, a memory store, default concurrency; load average ${load})\n`,
  );
  if (SMOKE)
    console.log(
      `smoke run: probes every ${SMOKE_PROBE_INTERVAL_MS / 1000} s instead of the default interval\n`,
    );
  console.log('| measure | probing off (the reconcile loop) | probing on |');
  console.log('|---|---:|---:|');
  console.log(`| all ${N} to Ready | ${f(off.readyMs)} ms | ${f(on.readyMs)} ms |`);
  console.log(`| operator CPU to Ready | ${f(off.readyCpuMs)} ms | ${f(on.readyCpuMs)} ms |`);
  console.log(
    `| status writes to Ready, per Proxy | ${f((off.readyWrites ?? 0) / N, 2)} | ${f((on.readyWrites ?? 0) / N, 2)} |`,
  );
  console.log(`| probes in flight at most (one socket each) | — | ${f(on.peakInFlight)} |`);
  console.log(
    `| TCP sockets open in the operator at most (probes, and the target's side of the proxies' connections) | ${f(off.peakTcp)} | ${f(on.peakTcp)} |`,
  );
  console.log(
    `\nSteady state, ${STEADY_MS / 1000} s at ${SMOKE ? 'the smoke run' : 'the default'}'s interval:\n`,
  );
  console.log('| measure | value |');
  console.log('|---|---:|');
  console.log(`| probes | ${f(on.steadyProbes)} |`);
  const perProbe = (ms: number | undefined) => ((ms ?? 0) / (on.steadyProbes ?? 0)) * 1000;
  console.log(
    `| operator CPU per probe (the probe, its target's answers, the scheduler) | ${f(perProbe(on.steadyCpuMs))} µs |`,
  );
  console.log(`| proxies' CPU per probe (both checks) | ${f(perProbe(on.proxiesCpuMs))} µs |`);
  console.log(
    `| operator CPU, share of one core | ${f(((on.steadyCpuMs ?? 0) / STEADY_MS) * 100, 1)} % |`,
  );
  console.log(`| status writes | ${count0(on.steadyWrites)} |`);
  console.log(`| TCP sockets open in the operator at most | ${f(on.steadyPeakTcp)} |`);
  console.log(`| Proxies Ready at the end | ${f(on.passing)} |`);
  console.log(
    `\nA full round (every Proxy probed once, all due at once, from the start): ${f(on.firstRoundMs)} ms at the default concurrency; the reconcile loop alone takes the ${N} Proxies to Ready in ${f(off.readyMs)} ms.`,
  );
}

const [mode, arg] = process.argv.slice(2);
if (mode === 'proxies') await proxies();
else if (mode === 'operator') await operatorChild(arg === 'on');
else await parent();
