// Peers: the Kubernetes API test server (the Kubernetes store: informer, status subresource,
// Events) with the operator in process, and the local provider's real proxy processes on
// 127.0.77.0/24 probed against the operator's own whoami target on loopback. The server's
// request counters show what probing costs in writes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import { SpawnedPrograms } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import type { KubeClient } from '../src/kube/client.js';
import { KubeStore } from '../src/kube/store.js';
import { Operator } from '../src/manager/operator.js';
import { type OwnProbeTarget, startProbeTarget } from '../src/probe/target.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import {
  call,
  clientFor,
  createProxy,
  installCrds,
  KubeTestServer,
  stored,
  tempDir,
  until,
} from './kube-support.js';
import { proxyPids } from './probe-support.js';

let server: KubeTestServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let client: KubeClient;
let root = '';
let providers: ProviderSet;
let target: OwnProbeTarget;
let store: KubeStore;
let operator: Operator;
const spawned = new SpawnedPrograms(proxyServerPath());

beforeAll(async () => {
  server = await KubeTestServer.start();
  tmp = await tempDir();
  await installCrds(server);
  client = await clientFor(server, tmp.dir);
  root = await mkdtemp(join(tmpdir(), 'proxy-op-probe-kube-'));
  const load = await parseProvidersConfig(
    `installation: probe-kube\nproviders:\n  - name: here\n    type: local\n    local: { stateDir: ${join(root, 'local')}, addressRange: 127.0.77.0/24 }\n`,
    new ProviderRegistry(),
  );
  if (!load.ok) throw new Error(load.problems.join('\n'));
  providers = new ProviderSet();
  await providers.apply(load.config);
  target = await startProbeTarget({ listen: '127.0.0.1:0', tlsListen: '127.0.0.1:0' });
  store = await KubeStore.start({ client, identity: 'test' });
  operator = new Operator({
    store,
    providers,
    probeTarget: target.target,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 0,
      backoffBaseMs: 50,
      // No resync in this test: whatever is written is written because of a probe.
      readyResyncMs: 3_600_000,
      probeIntervalMs: 100,
      probeTimeoutMs: 400,
      failureThreshold: 2,
      startupTimeoutMs: 5_000,
    },
  });
  operator.start();
}, 60_000);

afterAll(async () => {
  await call(server, 'DELETE', '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies/web');
  await until(() => stored(server, 'web') === undefined, 30_000, 'web gone').catch(() => {});
  await operator?.stop();
  await store?.close();
  await providers?.close();
  await target?.close();
  for (const pid of proxyPids(join(root, 'local'))) spawned.pids.add(pid);
  await spawned.killAll();
  client?.close();
  await server?.stop();
  await tmp?.dispose();
  await rm(root, { recursive: true, force: true });
}, 60_000);

const events = async (reason: string) =>
  (await call(server, 'GET', '/api/v1/namespaces/default/events')).body.items.filter(
    (e: { reason: string; involvedObject: { name: string } }) =>
      e.reason === reason && e.involvedObject.name === 'web',
  ) as Array<{ message: string; type: string }>;

describe('probing on the Kubernetes store', () => {
  it('writes Ready once a probe passed, with the egress IP, then nothing while probes keep passing', async () => {
    await createProxy(server, 'web', {
      provider: 'here',
      placement: {},
      allowedSources: ['127.0.0.0/8'],
    });
    await until(() => stored(server, 'web')?.status?.phase === 'Ready', 30_000, 'web Ready');
    const st = stored(server, 'web')?.status;
    expect(getCondition(st.conditions, 'DataPlane')).toMatchObject({
      status: 'True',
      reason: 'ProbePassed',
    });
    expect(st.egressIP).toBe(st.ip);
    expect(st.probe.result).toBe('Passed');
    server.counters.reset();
    const before = operator.probes?.stats().probes ?? 0;
    await new Promise((r) => setTimeout(r, 2_000));
    // About twenty probes, and not one write: the state did not change.
    expect((operator.probes?.stats().probes ?? 0) - before).toBeGreaterThanOrEqual(8);
    expect(server.counters.writes({ resource: 'proxies' })).toBe(0);
    expect(server.counters.writes({ resource: 'events' })).toBe(0);
  }, 60_000);

  it('SIGSTOP: ProbeFailed in at most two writes and one Event; SIGCONT: Ready again, one Event', async () => {
    const [pid] = proxyPids(join(root, 'local'));
    server.counters.reset();
    process.kill(pid as number, 'SIGSTOP');
    try {
      await until(() => stored(server, 'web')?.status?.phase === 'Unhealthy', 30_000, 'Unhealthy');
      const ready = getCondition(stored(server, 'web')?.status.conditions, 'Ready');
      expect(ready).toMatchObject({ status: 'False', reason: 'ProbeFailed' });
      await new Promise((r) => setTimeout(r, 1_000));
      // The provider's own Get sees the stopped proxy too (Provisioning): a few polls, each
      // written only if something changed.
      expect(server.counters.writes({ resource: 'proxies' })).toBeLessThanOrEqual(2);
    } finally {
      process.kill(pid as number, 'SIGCONT');
    }
    await until(() => stored(server, 'web')?.status?.phase === 'Ready', 30_000, 'Ready again');
    await until(
      async () => (await events('ProbePassed')).length === 1,
      10_000,
      'ProbePassed Event',
    );
    expect(await events('ProbeFailed')).toHaveLength(1);
    expect((await events('ProbeFailed'))[0]?.type).toBe('Warning');
  }, 60_000);
});
