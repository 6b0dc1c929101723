// Benchmark: N Proxies applied to the Kubernetes API test server and taken to Ready by the
// operator (KubeStore informer, work queue with 3 workers, reconciler, the reference in-memory
// provider, which answers at once). There is no real API server on this machine: every figure
// is measured against @proxy-op/kube-testserver, and set beside a baseline that makes the same
// writes through the same server with no operator at all, so the ratio shows the operator's own
// cost over the server's.
//
// Run with `npm run bench` (after `npm run build`). The server runs in this process; the
// operator runs alone in a child process (started with --expose-gc), so its memory is its own.
// BENCH_PROXIES sets N (default 1000), BENCH_STEADY_MS the steady window (default 40 s);
// BENCH_SMOKE=1 is the smoke run CI makes (30 Proxies, a 1 s window), only to show the benchmark
// runs and measures.
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeTestServer } from '@proxy-op/kube-testserver';
import { MemoryBackend, providerModule } from '@proxy-op/providertest/reference';
import {
  customResourceDefinitions,
  KubeClient,
  KubeStore,
  Operator,
  ProviderRegistry,
  ProviderSet,
  parseProvidersConfig,
} from '../dist/index.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const N = Number(process.env.BENCH_PROXIES ?? (SMOKE ? 30 : 1000));
const STEADY_MS = Number(process.env.BENCH_STEADY_MS ?? (SMOKE ? 1_000 : 40_000));
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: kubernetes: ${name}…\n`);
/** A count, `none` when it was measured and came out zero. */
const count0 = (n: number, d = 0) => (n === 0 ? 'none' : n.toFixed(d));
const CONCURRENCY = 16;

// ---- the operator, in the child ----

type ToChild = { cmd: 'memory' } | { cmd: 'stop' };
type FromChild =
  | { ev: 'started'; heap: number; rss: number }
  | { ev: 'ready'; at: number }
  | { ev: 'memory'; heap: number; rss: number; lists: number }
  | { ev: 'stopped'; backendHeap: number };

function heapNow(): number {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

async function child(kubeconfig: string): Promise<void> {
  const send = (m: FromChild) => process.send?.(m);
  const client = await KubeClient.load({ kubeconfig });
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
  const store = await KubeStore.start({ client, namespace: 'bench' });
  const providers = new ProviderSet();
  const operator = new Operator({
    store,
    providers,
    settings: { gcIntervalMs: 0, healthIntervalMs: 0, readyResyncMs: 3_600_000 },
  });
  await operator.applyProviders(load.config);
  operator.start();
  send({ ev: 'started', heap: heapNow(), rss: process.memoryUsage().rss });
  const poll = setInterval(() => {
    const list = store.list();
    if (list.length === N && list.every((p) => p.status.phase === 'Ready')) {
      clearInterval(poll);
      send({ ev: 'ready', at: Date.now() });
    }
  }, 10);
  process.on('message', async (m: ToChild) => {
    if (m.cmd === 'memory') {
      const heap = heapNow();
      const rss = process.memoryUsage().rss;
      send({ ev: 'memory', heap, rss, lists: store.lists });
    } else {
      await operator.stop();
      await store.close();
      // The reference provider's VM records live in this process too: their share, measured
      // only now, as the operator stopped (a Get of a VM gone would have it created again).
      const heap = heapNow();
      backend.vms.clear();
      backend.seeds.clear();
      const backendHeap = heap - heapNow();
      await providers.close();
      client.close();
      send({ ev: 'stopped', backendHeap });
      process.exit(0);
    }
  });
}

// ---- the driver and the server, in the parent ----

let agent: Agent | undefined;

function pooled(server: KubeTestServer): Agent {
  agent ??= new Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: server.caCert });
  return agent;
}

function call(
  server: KubeTestServer,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: { metadata?: { resourceVersion?: string } } }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, server.url),
      {
        method,
        // A keep-alive pool, as any client of a real API server has.
        agent: pooled(server),
        headers: {
          Authorization: `Bearer ${server.adminToken}`,
          ...(payload === undefined
            ? {}
            : {
                'Content-Type': contentType,
                'Content-Length': String(Buffer.byteLength(payload)),
              }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function proxy(i: number, ns: string) {
  return {
    apiVersion: 'proxy-op.io/v1alpha1',
    kind: 'Proxy',
    metadata: { name: `p${i}`, namespace: ns },
    spec: {
      provider: 'lab',
      placement: { machineType: 'small', image: 'debian-13' },
      allowedSources: ['10.0.0.0/8'],
    },
  };
}

async function pool(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function createAll(server: KubeTestServer, ns: string): Promise<void> {
  await pool(N, CONCURRENCY, async (i) => {
    const r = await call(
      server,
      'POST',
      `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxies`,
      proxy(i, ns),
    );
    if (r.status !== 201) throw new Error(`create p${i}: ${r.status}`);
  });
}

/**
 * The baseline: the writes the operator makes for one Proxy (the finalizer patch, the status
 * with the ID, the status Ready), made by a plain client with 3 workers, no informer, no
 * reconciler, no provider: what the server alone takes for the same work.
 */
async function baseline(server: KubeTestServer, ns: string): Promise<number> {
  const t0 = performance.now();
  await pool(N, 3, async (i) => {
    const path = `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxies/p${i}`;
    const get = await call(server, 'GET', path);
    const p1 = await call(
      server,
      'PATCH',
      path,
      {
        metadata: {
          finalizers: ['proxy-op.io/instance'],
          resourceVersion: get.body.metadata?.resourceVersion,
        },
      },
      'application/merge-patch+json',
    );
    const s1 = await call(server, 'PUT', `${path}/status`, {
      ...proxy(i, ns),
      metadata: {
        name: `p${i}`,
        namespace: ns,
        resourceVersion: p1.body.metadata?.resourceVersion,
      },
      status: { providerID: `vms/p${i}`, phase: 'Provisioning' },
    });
    await call(server, 'PUT', `${path}/status`, {
      ...proxy(i, ns),
      metadata: {
        name: `p${i}`,
        namespace: ns,
        resourceVersion: s1.body.metadata?.resourceVersion,
      },
      status: { providerID: `vms/p${i}`, phase: 'Ready', endpoint: 'http://10.0.0.1:3128' },
    });
  });
  return performance.now() - t0;
}

async function parent(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-kbench-'));
  const server = await KubeTestServer.start();
  for (const crd of customResourceDefinitions()) {
    await call(server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  }
  for (const ns of ['bench', 'base']) {
    await call(server, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
  }
  // The server alone: creates, then the operator's writes with no operator.
  part(`baseline: ${N} creates and the operator's writes, no operator`);
  let t = performance.now();
  await createAll(server, 'base');
  const createOnlyMs = performance.now() - t;
  const baselineMs = await baseline(server, 'base');
  await call(server, 'DELETE', '/apis/proxy-op.io/v1alpha1/namespaces/base/proxies');

  const kubeconfig = await server.writeKubeconfig(join(root, 'kubeconfig'));
  const op = fork(fileURLToPath(import.meta.url), ['child', kubeconfig], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // A child that exits before it answers fails the run instead of leaving it waiting.
  const waitFor = <E extends FromChild['ev']>(ev: E) =>
    new Promise<Extract<FromChild, { ev: E }>>((resolve, reject) => {
      const exited = (code: number | null) =>
        reject(new Error(`the operator's child exited with ${code} before "${ev}"`));
      const on = (m: FromChild) => {
        if (m.ev === ev) {
          op.off('message', on);
          op.off('exit', exited);
          resolve(m as Extract<FromChild, { ev: E }>);
        }
      };
      op.on('message', on);
      op.once('exit', exited);
    });
  part('the operator starting');
  const started = await waitFor('started');
  part(`${N} Proxies to Ready`);
  server.counters.reset();
  const ready = waitFor('ready');
  t = performance.now();
  const t0 = Date.now();
  await createAll(server, 'bench');
  const appliedMs = performance.now() - t;
  const readyAt = (await ready).at;
  const toReadyMs = readyAt - t0;
  // Everything but the benchmark's own creates was the operator's.
  const summary = server.counters.summary();
  const count = (f: Parameters<typeof server.counters.count>[0]) => server.counters.count(f);
  const requests = server.counters.count() - N;
  const proxyWrites = server.counters.writes({ resource: 'proxies' }) - N;
  const eventWrites = server.counters.writes({ resource: 'events' });
  const lists = count({ verb: 'list', resource: 'proxies' });
  const reads = count({ verb: 'get', resource: 'proxies' });
  op.send({ cmd: 'memory' });
  const mem = await waitFor('memory');
  // Steady state: nothing changes for a while; count what the operator asks meanwhile.
  part(`steady state for ${STEADY_MS / 1000} s`);
  server.counters.reset();
  await new Promise((r) => setTimeout(r, STEADY_MS));
  const steady = server.counters.summary();
  part('the operator stopping');
  op.send({ cmd: 'stop' });
  const { backendHeap } = await waitFor('stopped');
  agent?.destroy();
  await server.stop();
  await rm(root, { recursive: true, force: true });

  const f = (x: number, d = 0) => x.toFixed(d);
  const kib = (b: number) => b / 1024;
  console.log(`\n${N} Proxies applied to the Kubernetes API test server and taken to Ready`);
  console.log(
    '(reference in-memory provider, 3 workers; the server in the bench process, the operator alone in a child)\n',
  );
  console.log('| measure | value |');
  console.log('|---|---:|');
  console.log(`| creates (the benchmark's, ${CONCURRENCY} in flight) | ${f(appliedMs)} ms |`);
  console.log(`| first create to all ${N} Ready | ${f(toReadyMs)} ms |`);
  console.log(`| Proxies/s, apply to Ready | ${f((N / toReadyMs) * 1000)} |`);
  console.log(`| API requests per Proxy (all of the operator's) | ${f(requests / N, 2)} |`);
  console.log(`| writes to the Proxy per Proxy (finalizer, status) | ${f(proxyWrites / N, 2)} |`);
  console.log(`| Events created per Proxy | ${count0(eventWrites / N, 2)} |`);
  console.log(`| GETs of a Proxy (re-reads after a conflict) | ${count0(reads)} |`);
  console.log(`| full lists of Proxies during the run | ${count0(lists)} |`);
  console.log(
    `| operator heap per Proxy (after GC) | ${f(kib((mem.heap - started.heap) / N), 2)} KiB |`,
  );
  console.log(
    `| of which the reference provider's VM records | ${f(kib(backendHeap / N), 2)} KiB |`,
  );
  console.log(`| operator RSS growth per Proxy | ${f(kib((mem.rss - started.rss) / N), 2)} KiB |`);
  console.log(`| informer lists in the operator (1 = the first) | ${mem.lists} |`);
  console.log('\nBaseline (the same server, no operator):\n');
  console.log('| measure | value |');
  console.log('|---|---:|');
  console.log(`| the ${N} creates alone | ${f(createOnlyMs)} ms |`);
  console.log(
    `| the operator's writes, made directly (a GET, a patch, 2 status PUTs per Proxy, 3 workers) | ${f(baselineMs)} ms |`,
  );
  console.log(
    `| operator apply-to-Ready time / (creates + direct writes) | ${f(toReadyMs / (createOnlyMs + baselineMs), 2)} |`,
  );
  console.log(`\nRequests by verb during the run:`);
  for (const s of summary) {
    if (s.count > 0)
      console.log(
        `  ${s.verb} ${s.resource}${s.subresource ? `/${s.subresource}` : ''}: ${s.count}`,
      );
  }
  console.log(`\nSteady state (${STEADY_MS / 1000} s with nothing changing):`);
  if (steady.length === 0) console.log('  no requests');
  for (const s of steady) {
    console.log(`  ${s.verb} ${s.resource}${s.subresource ? `/${s.subresource}` : ''}: ${s.count}`);
  }
}

if (process.argv[2] === 'child') await child(process.argv[3] ?? '');
else await parent();
