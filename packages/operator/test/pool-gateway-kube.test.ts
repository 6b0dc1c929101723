// Peers: the real kubectl as the user's hands, against the Kubernetes API test server (apps/v1
// Deployments, Services, Secrets, owner references and their garbage collector), with the operator
// and the pool controller in process over the local provider's real proxy processes on
// 127.0.87.0/24. No controller runs Deployments there, so the test runs the gateway Pod's command
// itself, as the operator's own Deployment is run by hand: the Deployment's args, its two Secret
// volumes as files, and its status written as the Deployment controller would.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import {
  describeWithPeers,
  freePort,
  type JsonLinesProcess,
  type ProcessRun,
  runProcess,
  SpawnedPrograms,
  spawnJsonLines,
  startHttpEchoOrigin,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { KubeGateways } from '../src/kube/gateways.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import { CLI, requestViaGateway } from './cli-support.js';
import {
  clientFor,
  installCrds,
  KubeTestServer,
  startPoolOperator,
  until,
} from './kube-support.js';
import { proxyPids } from './probe-support.js';

const { afterAll, beforeAll, expect, it } = vitest;
const IMAGE = 'registry.example/proxy-op/operator:test';
const HAND = '127.0.87.250';

let server: KubeTestServer;
let home = '';
let kubeconfig = '';
let stopAll: () => Promise<void> = async () => {};
let gw: JsonLinesProcess | undefined;
let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>> | undefined;
const spawned = new SpawnedPrograms(proxyServerPath());

function kubectl(args: readonly string[]): Promise<ProcessRun> {
  return runProcess('kubectl', args, {
    env: { HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' },
    timeoutMs: 60_000,
  });
}

/** What the test reads of the objects kubectl prints. */
interface Obj {
  metadata: { generation?: number; ownerReferences?: Array<{ kind: string; name: string }> };
  type?: string;
  data?: Record<string, string>;
  spec: {
    ports: Array<{ port: number }>;
    sessionAffinity?: string;
    clusterIP?: string;
    template: {
      spec: {
        automountServiceAccountToken?: boolean;
        securityContext?: object;
        containers: Array<{ image: string; args: string[]; securityContext?: object }>;
        volumes: Array<{ secret: { secretName: string } }>;
      };
    };
  };
  status?: { gateway?: { url: string; ready: boolean; secretName?: string; message?: string } };
}

async function get(args: readonly string[]): Promise<Obj | undefined> {
  const r = await kubectl([...args, '-o', 'json', '--ignore-not-found']);
  return r.stdout.trim() === '' ? undefined : (JSON.parse(r.stdout) as Obj);
}

async function must(args: readonly string[]): Promise<Obj> {
  const o = await get(args);
  if (o === undefined) throw new Error(`kubectl ${args.join(' ')}: not found`);
  return o;
}

const gatewayStatus = async () => (await get(['get', 'proxypool', 'front']))?.status?.gateway;

const decoded = (s: Obj | undefined, key: string) =>
  Buffer.from(String(s?.data?.[key] ?? ''), 'base64').toString('utf8');

const manifest = (gateway: string) =>
  [
    'apiVersion: proxy-op.io/v1alpha1',
    'kind: ProxyPool',
    'metadata: { name: front }',
    'spec:',
    '  replicas: 2',
    '  template:',
    // The test's origin is on loopback, which the pool's proxies and gateway refuse unless allowed.
    `    spec: { provider: here, allowedSources: [127.0.0.0/8], placement: {}, egress: { allow: ['127.0.0.1:${echo?.port}'] } }`,
    `  gateway: ${gateway}`,
    '',
  ].join('\n');

describeWithPeers(vitest, 'spec.gateway on Kubernetes', ['kubectl'], () => {
  beforeAll(async () => {
    server = await KubeTestServer.start();
    echo = await startHttpEchoOrigin();
    home = await mkdtemp(join(tmpdir(), 'proxy-op-pool-gateway-kube-'));
    kubeconfig = await server.writeKubeconfig(join(home, 'kubeconfig'));
    await installCrds(server);
    const client = await clientFor(server, home);
    const load = await parseProvidersConfig(
      `installation: pool-gateway-kube\nproviders:\n  - name: here\n    type: local\n    local: { stateDir: ${join(home, 'local')}, addressRange: 127.0.87.0/24 }\n`,
      new ProviderRegistry(),
    );
    if (!load.ok) throw new Error(load.problems.join('\n'));
    const providers = new ProviderSet();
    await providers.apply(load.config);
    const gateways = new KubeGateways({ client, image: IMAGE, gatewayRecheckMs: 100 });
    const running = await startPoolOperator(client, providers, { gateways });
    stopAll = async () => {
      await running.stop();
      await providers.close();
      client.close();
    };
  }, 60_000);

  afterAll(async () => {
    gw?.kill('SIGKILL');
    await stopAll();
    for (const pid of proxyPids(join(home, 'local'))) spawned.pids.add(pid);
    await spawned.killAll();
    echo?.server.close();
    await server?.stop();
    await rm(home, { recursive: true, force: true });
  }, 60_000);

  it('makes a locked-down Deployment, a Service and a credential Secret, owned by the pool', async () => {
    const file = join(home, 'pool.yaml');
    await writeFile(file, manifest('{ enabled: true, port: 8080, session: client }'));
    expect((await kubectl(['apply', '-f', file])).stdout).toBe(
      'proxypool.proxy-op.io/front created\n',
    );
    await until(async () => (await gatewayStatus()) !== undefined, 20_000, 'status.gateway');
    const d = await must(['get', 'deployment', 'front-gateway']);
    expect(d.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ProxyPool', name: 'front' });
    const pod = d.spec.template.spec;
    const c = pod.containers[0] as Obj['spec']['template']['spec']['containers'][number];
    expect(c.image).toBe(IMAGE);
    expect(c.args.slice(0, 6)).toEqual([
      'gateway',
      'front',
      '-n',
      'default',
      '--upstreams',
      '/etc/proxy-op/pool/upstreams.json',
    ]);
    expect(c.args).toContain('--password-file');
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.volumes.map((v) => v.secret.secretName).sort()).toEqual([
      'front-endpoints',
      'front-gateway',
    ]);
    const table = await kubectl(['get', 'deployment', 'front-gateway']);
    expect(table.stdout.split('\n')[1]).toMatch(/^front-gateway\s+0\/1\s+0\s+0\s+\S+$/);

    const svc = await must(['get', 'service', 'front-gateway']);
    expect(svc.spec.ports).toEqual([
      { name: 'proxy', port: 8080, targetPort: 'proxy', protocol: 'TCP' },
    ]);
    expect(svc.spec.sessionAffinity).toBe('ClientIP');
    const secret = await get(['get', 'secret', 'front-gateway']);
    expect(secret?.type).toBe('kubernetes.io/basic-auth');
    expect(new URL(decoded(secret, 'url')).host).toBe('front-gateway.default.svc:8080');
    expect(decoded(secret, 'htpasswd')).toMatch(
      new RegExp(`^${decoded(secret, 'username')}:\\$6\\$`),
    );

    const st = await gatewayStatus();
    expect(st).toMatchObject({
      url: 'http://front-gateway.default.svc:8080',
      ready: false,
      secretName: 'front-gateway',
    });
    expect(st?.message).toContain('has no available Pod yet');
    expect(JSON.stringify(await get(['get', 'proxypool', 'front']))).not.toContain(
      decoded(secret, 'password'),
    );
  }, 60_000);

  it('its Pod’s command, run by hand with its volumes, serves the pool; the status then says ready', async () => {
    await until(
      async () =>
        JSON.parse(
          decoded(await get(['get', 'secret', 'front-endpoints']), 'upstreams.json') || '{}',
        ).upstreams?.length === 2,
      30_000,
      'two upstreams in front-endpoints',
    );
    // The two Secret volumes, as the kubelet projects them.
    const etc = join(home, 'etc');
    await mkdir(join(etc, 'pool'), { recursive: true });
    await mkdir(join(etc, 'gateway'), { recursive: true });
    const endpoints = await get(['get', 'secret', 'front-endpoints']);
    await writeFile(join(etc, 'pool', 'upstreams.json'), decoded(endpoints, 'upstreams.json'));
    const secret = await get(['get', 'secret', 'front-gateway']);
    await writeFile(join(etc, 'gateway', 'htpasswd'), decoded(secret, 'htpasswd'));
    const d = await must(['get', 'deployment', 'front-gateway']);
    const port = await freePort(HAND);
    const args = (d.spec.template.spec.containers[0]?.args ?? []).map((a) =>
      a.replace('/etc/proxy-op', etc).replace('0.0.0.0:3128', `${HAND}:${port}`),
    );
    expect(args).toContain(`${HAND}:${port}`);
    gw = spawnJsonLines(process.execPath, [CLI, ...args]);
    await gw.waitForLog((l) => (l.msg === 'gateway listening' ? l : undefined));
    // What the Deployment controller writes once its Pod is available.
    const patched = await kubectl([
      'patch',
      'deployment',
      'front-gateway',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          observedGeneration: d.metadata.generation,
          replicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
          updatedReplicas: 1,
        },
      }),
    ]);
    expect(patched.stderr).toBe('');
    await until(async () => (await gatewayStatus())?.ready === true, 10_000, 'ready');
    expect((await gatewayStatus())?.message).toBeUndefined();

    const auth = `Basic ${Buffer.from(`${decoded(secret, 'username')}:${decoded(secret, 'password')}`).toString('base64')}`;
    const names = (
      JSON.parse(decoded(endpoints, 'upstreams.json')) as { upstreams: Array<{ name: string }> }
    ).upstreams.map((u) => u.name);
    const origin = `http://127.0.0.1:${echo?.port}/through-the-gateway`;
    const through = await requestViaGateway({ address: HAND, port }, origin, auth);
    expect(through.status).toBe(200);
    expect(names).toContain(through.upstream);
    expect((await requestViaGateway({ address: HAND, port }, origin, undefined)).status).toBe(407);
  }, 60_000);

  it('a changed port updates the Service in place (its cluster IP kept); disabled, all three go', async () => {
    const before = await must(['get', 'service', 'front-gateway']);
    const file = join(home, 'pool.yaml');
    await writeFile(file, manifest('{ enabled: true, port: 9090, session: client }'));
    expect((await kubectl(['apply', '-f', file])).stderr).toBe('');
    await until(
      async () => (await get(['get', 'service', 'front-gateway']))?.spec.ports[0]?.port === 9090,
      10_000,
      'port 9090',
    );
    const after = await must(['get', 'service', 'front-gateway']);
    expect(after.spec.clusterIP).toBe(before.spec.clusterIP);
    expect(new URL(decoded(await get(['get', 'secret', 'front-gateway']), 'url')).port).toBe(
      '9090',
    );

    await writeFile(file, manifest('{ enabled: false }'));
    expect((await kubectl(['apply', '-f', file])).stderr).toBe('');
    await until(
      async () =>
        (await get(['get', 'deployment', 'front-gateway'])) === undefined &&
        (await get(['get', 'service', 'front-gateway'])) === undefined &&
        (await get(['get', 'secret', 'front-gateway'])) === undefined &&
        (await gatewayStatus()) === undefined,
      15_000,
      'the gateway objects gone',
    );
  }, 60_000);

  it('kubectl delete proxypool takes a gateway’s objects with it', async () => {
    const file = join(home, 'pool.yaml');
    await writeFile(file, manifest('{ enabled: true }'));
    expect((await kubectl(['apply', '-f', file])).stderr).toBe('');
    await until(
      async () => (await get(['get', 'deployment', 'front-gateway'])) !== undefined,
      10_000,
      'the Deployment again',
    );
    expect((await kubectl(['delete', 'proxypool', 'front', '--wait=false'])).stderr).toBe('');
    await until(
      async () =>
        (await get(['get', 'deployment', 'front-gateway'])) === undefined &&
        (await get(['get', 'service', 'front-gateway'])) === undefined,
      30_000,
      'the gateway objects collected',
    );
  }, 60_000);
});
