// Peers: the real kubectl as the user's hands, against the Kubernetes API test server (the CRDs with
// the scale subresource, owner references and their garbage collector, a watch stream of Proxies),
// with the operator and the pool controller in process over the reference provider.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { describeWithPeers, type ProcessRun, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  clientFor,
  installCrds,
  KubeTestServer,
  startPoolOperator,
  until,
} from './kube-support.js';
import { providerSet, testRegistry } from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;
const P = '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies';

let server: KubeTestServer;
let home = '';
let kubeconfig = '';
let stopAll: () => Promise<void> = async () => {};
let backends: ReturnType<typeof testRegistry>['backends'];

function kubectl(args: readonly string[]): Promise<ProcessRun> {
  return runProcess('kubectl', args, {
    env: { HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' },
    timeoutMs: 60_000,
  });
}

async function json(args: readonly string[]): Promise<Record<string, unknown>> {
  const r = await kubectl([...args, '-o', 'json']);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

interface RawProxy {
  metadata: { name: string; deletionTimestamp?: string; ownerReferences?: Array<{ name: string }> };
  spec: { port: number };
  status?: { conditions?: Array<{ type: string; status: string }> };
}
const items = async () =>
  ((await json(['get', 'proxies', '-l', 'proxy-op.io/pool=web'])).items as RawProxy[]) ?? [];
const pool = async () =>
  (await json(['get', 'proxypool', 'web'])) as { status?: Record<string, unknown> };

describeWithPeers(vitest, 'ProxyPool on Kubernetes', ['kubectl', 'openssl'], () => {
  beforeAll(async () => {
    server = await KubeTestServer.start();
    home = await mkdtemp(join(tmpdir(), 'proxy-op-pool-kube-'));
    kubeconfig = await server.writeKubeconfig(join(home, 'kubeconfig'));
    await installCrds(server);
    const client = await clientFor(server, home);
    const reg = testRegistry();
    backends = reg.backends;
    const providers = await providerSet(
      'installation: pool-kube\nproviders:\n  - name: lab\n    type: memory\n',
      reg.registry,
    );
    const running = await startPoolOperator(client, providers);
    stopAll = async () => {
      await running.stop();
      await providers.close();
      client.close();
    };
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await server?.stop();
    await rm(home, { recursive: true, force: true });
  });

  it('kubectl apply, then kubectl scale: owned Proxies, the scale subresource, the printer columns, the endpoint ConfigMap and Secret', async () => {
    const manifest = join(home, 'pool.yaml');
    await writeFile(
      manifest,
      [
        'apiVersion: proxy-op.io/v1alpha1',
        'kind: ProxyPool',
        'metadata: { name: web }',
        'spec:',
        '  replicas: 2',
        '  template:',
        '    metadata: { labels: { team: edge } }',
        '    spec: { provider: lab, allowedSources: [10.0.0.0/8], placement: { machineType: small, image: debian-13 } }',
        '',
      ].join('\n'),
    );
    const applied = await kubectl(['apply', '-f', manifest]);
    expect(applied.stdout).toBe('proxypool.proxy-op.io/web created\n');
    await until(async () => (await pool()).status?.availableReplicas === 2, 20_000, '2 available');
    const scaled = await kubectl(['scale', 'proxypool/web', '--replicas=4']);
    expect(scaled.stderr).toBe('');
    expect(scaled.stdout).toBe('proxypool.proxy-op.io/web scaled\n');
    await until(async () => (await pool()).status?.availableReplicas === 4, 20_000, '4 available');
    const ps = await items();
    expect(ps).toHaveLength(4);
    for (const p of ps) expect(p.metadata.ownerReferences?.[0]?.name).toBe('web');
    const labelled = await kubectl(['get', 'proxies', '-l', 'team=edge', '-o', 'name']);
    expect(labelled.stdout.trim().split('\n')).toHaveLength(4);
    const scale = (await json(['get', 'proxypool', 'web', '--subresource=scale'])) as {
      spec: { replicas: number };
      status: { replicas: number; selector: string };
    };
    expect(scale.spec.replicas).toBe(4);
    expect(scale.status).toEqual({ replicas: 4, selector: 'proxy-op.io/pool=web' });
    const table = await kubectl(['get', 'proxypools']);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^NAME\s+DESIRED\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/,
    );
    expect(table.stdout.split('\n')[1]).toMatch(/^web\s+4\s+4\s+4\s+4\s+\S+$/);
    const cm = (await json(['get', 'configmap', 'web-endpoints'])) as {
      data: { endpoints: string };
    };
    expect(cm.data.endpoints.trim().split('\n')).toHaveLength(4);
    expect(cm.data.endpoints).not.toContain('@');
    const secret = (await json(['get', 'secret', 'web-endpoints'])) as {
      data: { endpoints: string };
    };
    const withCreds = Buffer.from(secret.data.endpoints, 'base64')
      .toString('utf8')
      .trim()
      .split('\n');
    expect(withCreds).toHaveLength(4);
    for (const u of withCreds) expect(new URL(u).password.length).toBeGreaterThanOrEqual(32);
    // The same, named, for a gateway that mounts the Secret.
    const named = JSON.parse(
      Buffer.from(
        (secret.data as Record<string, string>)['upstreams.json'] ?? '',
        'base64',
      ).toString('utf8'),
    ) as { upstreams: Array<{ name: string; url: string }> };
    expect(named.upstreams.map((u) => u.url).sort()).toEqual([...withCreds].sort());
    for (const u of named.upstreams) expect(u.name).toMatch(/^web-[a-z0-9]{5}$/);
  }, 60_000);

  it('a template change rolls within maxSurge 1 / maxUnavailable 0 at every event of the watch stream', async () => {
    const live = new Map<string, RawProxy>();
    let most = 0;
    let fewestReady = Number.POSITIVE_INFINITY;
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const ready = (p: RawProxy) =>
      p.metadata.deletionTimestamp === undefined &&
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    let watching = false;
    const req = await new Watch(kc).watch(
      P,
      { labelSelector: 'proxy-op.io/pool=web' },
      (type, o: RawProxy) => {
        if (type === 'DELETED') live.delete(o.metadata.name);
        else if (type !== 'BOOKMARK') live.set(o.metadata.name, o);
        const serving = [...live.values()].filter(
          (p) => p.metadata.deletionTimestamp === undefined,
        );
        most = Math.max(most, serving.length);
        if (watching) fewestReady = Math.min(fewestReady, serving.filter(ready).length);
      },
      () => {},
    );
    await until(() => live.size === 4, 10_000, 'the watch lists 4');
    watching = true;
    const patched = await kubectl([
      'patch',
      'proxypool',
      'web',
      '--type=merge',
      '-p',
      '{"spec":{"template":{"spec":{"port":8080}}}}',
    ]);
    expect(patched.stdout).toBe('proxypool.proxy-op.io/web patched\n');
    await until(
      async () => {
        const st = (await pool()).status;
        const ps = await items();
        return (
          st?.updatedReplicas === 4 &&
          st.availableReplicas === 4 &&
          ps.length === 4 &&
          ps.every((p) => p.spec.port === 8080)
        );
      },
      30_000,
      'rolled',
    );
    req.abort();
    expect(most).toBe(5);
    expect(fewestReady).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('kubectl annotate proxy-op.io/remediate replaces that Proxy, and the pool says so in an Event', async () => {
    const before = await items();
    const victim = before[0]?.metadata.name ?? '';
    const annotated = await kubectl(['annotate', 'proxy', victim, 'proxy-op.io/remediate=now']);
    expect(annotated.stdout).toBe(`proxy.proxy-op.io/${victim} annotated\n`);
    await until(
      async () => {
        const ps = await items();
        return (
          ps.length === 4 &&
          !ps.some((p) => p.metadata.name === victim) &&
          (await pool()).status?.availableReplicas === 4
        );
      },
      30_000,
      'replaced',
    );
    const events = await kubectl([
      'get',
      'events',
      '--field-selector',
      'involvedObject.kind=ProxyPool,involvedObject.name=web',
    ]);
    expect(events.stdout).toMatch(
      new RegExp(
        `Normal\\s+Remediating\\s+proxypool/web\\s+Proxy ${victim} carries proxy-op.io/remediate; it is replaced`,
      ),
    );
  }, 60_000);

  it('kubectl delete proxypool takes its Proxies, their instances and its endpoint objects with it', async () => {
    const r = await kubectl(['delete', 'proxypool', 'web']);
    expect(r.stdout).toBe('proxypool.proxy-op.io "web" deleted\n');
    await until(async () => (await items()).length === 0, 30_000, 'Proxies gone');
    expect(backends.get('lab')?.vms.size).toBe(0);
    await until(
      async () =>
        (await kubectl(['get', 'configmap', 'web-endpoints'])).stderr.includes('NotFound'),
      10_000,
      'ConfigMap gone',
    );
    expect((await kubectl(['get', 'secret', 'web-endpoints'])).stderr).toContain('NotFound');
  }, 60_000);
});
