// Peers: the real kubectl (1.32, kustomize built in; a fresh HOME per test) as the user's
// hands, against the Kubernetes API test server; the operator runs as `proxy-op run` processes
// with the shipped ServiceAccount's token and exactly the shipped RBAC, over the reference
// provider (file-backed, fixtures/file-provider.mjs) and the local provider (real proxies).
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers, requestThroughProxy, runProcess } from '@proxy-op/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli, spawnCli } from './cli-support.js';
import { call, KubeTestServer, until } from './kube-support.js';

const PKG = fileURLToPath(new URL('..', import.meta.url));
const DEPLOY = join(PKG, 'deploy');
const FILE_PROVIDER = fileURLToPath(new URL('./fixtures/file-provider.mjs', import.meta.url));
const REMOTE = 'https://github.com/proxy-op/proxy-op//packages/operator/deploy/';

/** The fenced block of the README whose info string is `lang tag`. */
export async function readmeBlock(lang: string, tag: string): Promise<string> {
  const text = await readFile(join(PKG, 'README.md'), 'utf8');
  const fence = '```';
  const m = new RegExp(`${fence}${lang} ${tag}\\n([\\s\\S]*?)\\n${fence}`).exec(text);
  if (m?.[1] === undefined) throw new Error(`README has no \`\`\`${lang} ${tag} block`);
  return `${m[1]}\n`;
}

/** The Deployment's container as the base builds it. */
async function deploymentContainer(home: string): Promise<{
  args: string[];
  env: Array<{ name: string; value?: string; valueFrom?: unknown }>;
}> {
  const r = await runProcess('kubectl', ['kustomize', join(DEPLOY, 'base')], {
    env: { HOME: home },
  });
  expect(r.code).toBe(0);
  for (const doc of parseAllDocuments(r.stdout)) {
    const o = doc.toJS() as {
      kind?: string;
      spec?: { template: { spec: { containers: unknown[] } } };
    };
    if (o.kind === 'Deployment') return o.spec?.template.spec.containers[0] as never;
  }
  throw new Error('no Deployment in the base');
}

type Spawned = ReturnType<typeof spawnCli>;

/** A request through the proxy at `proxyUrl`, with the credential the URL carries, if any. */
function viaProxy(proxyUrl: string, target: string): Promise<{ status: number; body: string }> {
  const p = new URL(proxyUrl);
  const user = decodeURIComponent(p.username);
  const proxyAuthorization =
    user === ''
      ? undefined
      : `Basic ${Buffer.from(`${user}:${decodeURIComponent(p.password)}`).toString('base64')}`;
  return requestThroughProxy({ address: p.hostname, port: Number(p.port) }, target, {
    proxyAuthorization,
  });
}

describeWithPeers(
  { describe, it },
  'on Kubernetes, with kubectl as the user’s hands',
  ['kubectl'],
  () => {
    let server: KubeTestServer;
    let root = '';
    let home = '';
    let providersFile = '';
    let backendFile = '';
    let saKubeconfig = '';
    let baseArgs: string[] = [];
    let origin: Server;
    let originPort = 0;
    const operators: Spawned[] = [];

    /** kubectl with the admin kubeconfig and this test's fresh HOME. */
    const kubectl = (args: string[], timeoutMs = 60_000) =>
      runProcess('kubectl', args, {
        env: { HOME: home, KUBECONFIG: join(home, 'kubeconfig') },
        timeoutMs,
      });

    /** The HTTP URL of the first operator's own probe target. */
    let probeGet = '';
    /** Starts `proxy-op run` as the Deployment would, with the ServiceAccount's token. */
    const startOperator = (extra: string[] = [], env: Record<string, string> = {}): Spawned => {
      const op = spawnCli(
        [
          ...baseArgs,
          `--providers=${providersFile}`,
          '--listen=127.0.0.1:0',
          // The probe target on loopback, where the local proxies reach it (there is no Service).
          '--probe-listen=127.0.0.1:0',
          '--probe-tls-listen=127.0.0.1:0',
          '--kubeconfig',
          saKubeconfig,
          '--lease-duration=3s',
          '--renew-deadline=2s',
          '--retry-period=250ms',
          '--backoff-base=100ms',
          '--health-interval=1s',
          '--gc-interval=0',
          '--output=json',
          ...extra,
        ],
        { POD_NAMESPACE: 'proxy-op-system', HOME: root, ...env },
      );
      operators.push(op);
      return op;
    };

    beforeAll(async () => {
      server = await KubeTestServer.start();
      root = await mkdtemp(join(tmpdir(), 'proxy-op-k8s-e2e-'));
      backendFile = join(root, 'backend.json');
      origin = createServer((req, res) => res.end(`origin ${req.method} ${req.url}`));
      await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
      originPort = (origin.address() as AddressInfo).port;
    });

    beforeEach(async () => {
      home = await mkdtemp(join(root, 'home-'));
      await server.writeKubeconfig(join(home, 'kubeconfig'));
    });

    afterAll(async () => {
      for (const op of operators) op.kill('SIGKILL');
      await Promise.all(operators.map((op) => op.exit));
      // The local provider's proxies are detached processes: stop them.
      const state = join(root, 'local');
      const { readdir } = await import('node:fs/promises');
      for (const f of await readdir(state).catch(() => [] as string[])) {
        if (!f.endsWith('.json')) continue;
        const rec = JSON.parse(await readFile(join(state, f), 'utf8')) as { pid?: number };
        // Only a process that still reads this state file is one of them: a recorded pid may
        // have been taken by another program since.
        const cmdline =
          rec.pid === undefined
            ? ''
            : await readFile(`/proc/${rec.pid}/cmdline`, 'utf8').catch(() => '');
        if (rec.pid !== undefined && cmdline.split('\0').includes(join(state, f))) {
          try {
            process.kill(rec.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      await new Promise((r) => origin.close(r));
      await server.stop();
      await rm(root, { recursive: true, force: true });
    });

    it('installs with kubectl apply -k: CRDs, ServiceAccount, RBAC, the providers ConfigMap, the metrics Service', async () => {
      const overlay = join(root, 'my-proxy-op');
      await mkdir(overlay);
      // The README's overlay, with the base and components of this checkout instead of GitHub.
      const fromReadme = await readmeBlock('yaml', 'kustomization');
      const local = `${relative(overlay, DEPLOY)}/`;
      let kustomization = fromReadme.replaceAll(REMOTE, local).replace(/\?ref=[^\s]+/g, '');
      // The test server serves no apps/v1 (see its README): the Deployment is left out here and
      // its container is run below as a process, with the same arguments.
      kustomization += `patches:
  - patch: |-
      $patch: delete
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: proxy-op
        namespace: proxy-op-system
`;
      await writeFile(join(overlay, 'kustomization.yaml'), kustomization);
      await writeFile(
        join(overlay, 'providers.yaml'),
        `installation: e2e
providers:
  - name: lab
    type: ${FILE_PROVIDER}
    probe: { enabled: false }
    memory-file:
      file: ${backendFile}
  - name: here
    type: local
    local:
      stateDir: ${join(root, 'local')}
`,
      );
      const applied = await kubectl(['apply', '-k', overlay]);
      expect(applied.stderr).toBe('');
      expect(applied.code).toBe(0);
      for (const line of [
        'namespace/proxy-op-system created',
        'customresourcedefinition.apiextensions.k8s.io/proxies.proxy-op.io created',
        'customresourcedefinition.apiextensions.k8s.io/providerhealths.proxy-op.io created',
        'serviceaccount/proxy-op created',
        'role.rbac.authorization.k8s.io/proxy-op-leader-election created',
        'clusterrole.rbac.authorization.k8s.io/proxy-op created',
        'clusterrolebinding.rbac.authorization.k8s.io/proxy-op created',
        'configmap/proxy-op-providers created',
        'service/proxy-op-metrics created',
        'service/proxy-op-probe created',
      ]) {
        expect(applied.stdout).toContain(line);
      }
      const established = await kubectl([
        'wait',
        '--for=condition=Established',
        'crd/proxies.proxy-op.io',
        'crd/providerhealths.proxy-op.io',
      ]);
      expect(established.code).toBe(0);
      // The providers file is what the ConfigMap holds, as the Deployment mounts it.
      const cm = await kubectl([
        'get',
        'configmap',
        'proxy-op-providers',
        '-n',
        'proxy-op-system',
        '-o',
        'jsonpath={.data.providers\\.yaml}',
      ]);
      expect(cm.code).toBe(0);
      providersFile = join(root, 'providers.yaml');
      await writeFile(providersFile, cm.stdout);
      // The operator's credentials: the ServiceAccount's token and nothing else.
      saKubeconfig = join(root, 'sa-kubeconfig');
      await server.writeKubeconfig(saKubeconfig, {
        token: server.serviceAccountToken('proxy-op-system', 'proxy-op'),
      });
      const container = await deploymentContainer(home);
      expect(container.env).toContainEqual({
        name: 'POD_NAMESPACE',
        valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
      });
      baseArgs = container.args.filter(
        (a) =>
          !a.startsWith('--providers=') && !a.startsWith('--listen=') && !a.startsWith('--probe-'),
      );
      expect(baseArgs[0]).toBe('run');
      const op = startOperator();
      // A minute for a first line: starting Node and the operator can take many seconds when
      // every other suite runs beside this one.
      probeGet = String(
        await op.waitForLog(
          (l) => (l.msg === 'serving the probe target' ? l.get : undefined),
          60_000,
        ),
      );
      await op.waitForLog((l) => (l.msg === 'became the leader' ? true : undefined), 60_000);
      await op.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined), 60_000);
    }, 120_000);

    it('Proxies applied with kubectl reach Ready on the reference and the local provider', async () => {
      const file = join(home, 'proxies.yaml');
      await writeFile(
        file,
        `apiVersion: proxy-op.io/v1alpha1
kind: Proxy
metadata:
  name: ref
spec:
  provider: lab
  placement: { machineType: small, image: debian-13 }
  allowedSources: [10.0.0.0/8]
---
apiVersion: proxy-op.io/v1alpha1
kind: Proxy
metadata:
  name: loc
spec:
  provider: here
  allowedSources: [127.0.0.0/8]
  egress: { allow: ['127.0.0.1:${originPort}'] }
`,
      );
      const applied = await kubectl(['apply', '-f', file]);
      expect(applied.code).toBe(0);
      // The README's Proxy, applied and waited for as the README says.
      await writeFile(join(home, 'web.yaml'), await readmeBlock('yaml', 'proxy'));
      expect((await kubectl(['apply', '-f', join(home, 'web.yaml')])).code).toBe(0);
      const waited = await kubectl([
        'wait',
        '--for=condition=Ready',
        'proxy/ref',
        'proxy/loc',
        'proxy/web',
        '--timeout=60s',
      ]);
      expect(waited.stderr).toBe('');
      expect(waited.stdout).toContain('proxy.proxy-op.io/ref condition met');
      expect(waited.stdout).toContain('proxy.proxy-op.io/loc condition met');
      expect(waited.stdout).toContain('proxy.proxy-op.io/web condition met');
      const table = await kubectl(['get', 'proxies']);
      expect(table.stdout).toMatch(/^NAME\s+PROVIDER\s+PHASE\s+ENDPOINT\s+EGRESS\s+AGE$/m);
      expect(table.stdout).toMatch(
        /^ref\s+lab\s+Ready\s+http:\/\/10\.0\.0\.\d+:3128\s+(<none>\s+)?\d+s$/m,
      );
      const endpoint = await kubectl(['get', 'proxy', 'loc', '-o', 'jsonpath={.status.endpoint}']);
      expect(endpoint.stdout).toMatch(/^http:\/\/127\.0\.0\.\d+:3128$/);
      // `loc` is Ready because a probe through it passed; the target saw its own address.
      const ip = new URL(endpoint.stdout).hostname;
      expect(table.stdout).toMatch(
        new RegExp(`^loc\\s+here\\s+Ready\\s+\\S+\\s+${ip.replaceAll('.', '\\.')}\\s`, 'm'),
      );
      const dataPlane = await kubectl([
        'get',
        'proxy',
        'loc',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="DataPlane")].reason}',
      ]);
      expect(dataPlane.stdout).toBe('ProbePassed');
      // `proxy-op probe` reads the Proxy from the cluster and probes it now, step by step.
      // A minute for each command: on a loaded machine the CLI's start alone takes seconds.
      // Against the operator's own target: the Proxy's policy lets it reach that one (on loopback
      // here; in a cluster, the operator's Service).
      const probed = await runCli(
        ['probe', 'loc', '--kubeconfig', saKubeconfig, '--target', probeGet],
        {},
        60_000,
      );
      expect(probed.code, probed.stderr).toBe(0);
      expect(probed.stdout).toContain(`passed in `);
      expect(probed.stdout).toContain(`the target saw ${ip}`);
      // The local proxy is real: it forwards a request to an origin on loopback, with the
      // credential of the Proxy's Secret (the URL `proxy-op url` prints), and 407 without it.
      const without = await viaProxy(endpoint.stdout, `http://127.0.0.1:${originPort}/hello`);
      expect(without.status).toBe(407);
      const url = await runCli(['url', 'loc', '--kubeconfig', saKubeconfig], {}, 60_000);
      expect(url.code, url.stderr).toBe(0);
      const fromSecret = await kubectl([
        'get',
        'secret',
        'loc-proxy-credentials',
        '-o',
        'jsonpath={.type} {.data.url}',
      ]);
      const [type, b64] = fromSecret.stdout.split(' ');
      expect(type).toBe('kubernetes.io/basic-auth');
      expect(Buffer.from(b64 ?? '', 'base64').toString('utf8')).toBe(url.stdout.trim());
      const got = await viaProxy(url.stdout.trim(), `http://127.0.0.1:${originPort}/hello`);
      expect(got).toEqual({ status: 200, body: 'origin GET /hello' });
      // The Secret is the Proxy's: its owner, gone with it (the garbage collector's ownerReference).
      const owner = await kubectl([
        'get',
        'secret',
        'loc-proxy-credentials',
        '-o',
        'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}',
      ]);
      expect(owner.stdout).toBe('Proxy/loc');
      // Events on the Proxies, and the providers' health.
      const events = await kubectl(['get', 'events', '-n', 'default']);
      expect(events.stdout).toMatch(/Normal\s+Created\s+proxy\/ref\s+created instance vms\//);
      expect(events.stdout).toMatch(/Normal\s+Created\s+proxy\/loc\s+created instance processes\//);
      await until(
        async () =>
          /^here\s+local\s+true\s/m.test((await kubectl(['get', 'providerhealths'])).stdout),
        15_000,
        'ProviderHealth here ready',
      );
      const health = await kubectl(['get', 'providerhealths']);
      expect(health.stdout).toMatch(/^NAME\s+TYPE\s+READY\s+LAST CHECK\s+AGE$/m);
      expect(health.stdout).toMatch(/^lab\s+memory-file\s+true\s/m);
    }, 120_000);

    it('an edit replaces the instance; a delete waits for it to go', async () => {
      const refs = async () =>
        (JSON.parse(await readFile(backendFile, 'utf8')) as Array<{ name: string }>)
          .map((v) => v.name)
          .filter((n) => n.startsWith('proxy-default-ref-'));
      expect(await refs()).toHaveLength(1);
      const patched = await kubectl([
        'patch',
        'proxy',
        'ref',
        '--type=merge',
        '-p',
        '{"spec":{"port":8080}}',
      ]);
      expect(patched.code).toBe(0);
      // The first status written for generation 2 already says Ready=False (Replacing).
      const seen = await kubectl([
        'wait',
        '--for=jsonpath={.status.observedGeneration}=2',
        'proxy/ref',
        '--timeout=60s',
      ]);
      expect(seen.stderr).toBe('');
      const ready = await kubectl(['wait', '--for=condition=Ready', 'proxy/ref', '--timeout=60s']);
      expect(ready.code).toBe(0);
      const endpoint = await kubectl(['get', 'proxy', 'ref', '-o', 'jsonpath={.status.endpoint}']);
      expect(endpoint.stdout).toMatch(/^http:\/\/10\.0\.0\.\d+:8080$/);
      expect(await refs()).toHaveLength(1);
      const deleted = await kubectl(['delete', 'proxy', 'ref', '--timeout=60s']);
      expect(deleted.stdout).toContain('proxy.proxy-op.io "ref" deleted');
      expect(deleted.code).toBe(0);
      expect(await refs()).toEqual([]);
      const gone = await kubectl(['get', 'proxy', 'ref']);
      expect(gone.stderr).toContain('proxies.proxy-op.io "ref" not found');
      const events = await kubectl(['get', 'events', '-n', 'default']);
      expect(events.stdout).toMatch(/Normal\s+Replacing\s+proxy\/ref/);
      expect(events.stdout).toMatch(/Normal\s+Deleted\s+proxy\/ref\s+deleted instance vms\//);
    }, 120_000);

    /** Applies one Proxy on the reference provider and waits for it with kubectl. */
    const applyAndWait = async (name: string) => {
      const file = join(home, `${name}.yaml`);
      await writeFile(
        file,
        `apiVersion: proxy-op.io/v1alpha1
kind: Proxy
metadata:
  name: ${name}
spec:
  provider: lab
  placement: { machineType: small, image: debian-13 }
  allowedSources: [10.0.0.0/8]
`,
      );
      expect((await kubectl(['apply', '-f', file])).code).toBe(0);
      const w = await kubectl(['wait', '--for=condition=Ready', `proxy/${name}`, '--timeout=60s']);
      if (w.code !== 0) {
        // What the Proxy and the running operators said, to tell a stuck reconcile from a slow one.
        const got = await kubectl(['get', 'proxy', name, '-o', 'json']);
        const said = operators
          .filter((o) => o.pid !== undefined)
          .map((o) =>
            o.logs
              .slice(-40)
              .map((l) => JSON.stringify(l))
              .join('\n'),
          );
        throw new Error(
          `Proxy ${name} not Ready in 60 s: ${w.stderr}\n${got.stdout}\n--- operator logs ---\n${said.join('\n---\n')}`,
        );
      }
      expect(w.stderr).toBe('');
    };

    /** How often an operator listed every Proxy (its informer logs each full list). */
    const lists = (op: Spawned | undefined = operators[0]) =>
      op?.logs.filter((l) => l.msg === 'listed the Proxies').length ?? 0;

    it('a watch dropped mid-stream is resumed, not listed again', async () => {
      const before = lists();
      expect(before).toBe(1);
      const failures = () =>
        operators[0]?.logs.filter((l) => l.msg === 'the Proxy informer failed').length ?? 0;
      const failed = failures();
      expect(server.faults.dropWatches({ abrupt: true })).toBeGreaterThanOrEqual(1);
      await applyAndWait('after-drop');
      expect(failures()).toBe(failed + 1);
      expect(lists()).toBe(before);
    }, 90_000);

    it('a storm of 409s on the operator’s writes is ridden out', async () => {
      // kubectl apply creates (POST): every conflict falls on the operator's patches and updates.
      server.faults.conflictNextWrites(6, { resource: 'proxies', verb: ['patch', 'update'] });
      await applyAndWait('storm');
      // All six were spent on the operator's writes: a user's write goes through now.
      const labelled = await kubectl(['label', 'proxy', 'storm', 'weathered=yes']);
      expect(labelled.stderr).toBe('');
      expect(labelled.stdout).toContain('proxy.proxy-op.io/storm labeled');
    }, 90_000);

    it('an expired watch window (410) makes the informer list again, then it watches', async () => {
      const before = lists();
      // A change elsewhere, then a compaction past the informer's version: its resumed watch
      // is answered 410.
      await call(server, 'POST', '/api/v1/namespaces/default/configmaps', {
        body: { metadata: { name: 'elsewhere-410' } },
      });
      server.faults.expireWatchWindow();
      server.faults.dropWatches();
      await applyAndWait('after-410');
      await until(() => lists() === before + 1, 10_000, 'a new list');
      // Then the watch holds: no more lists while Proxies change.
      const settled = lists();
      await applyAndWait('after-410-b');
      await new Promise((r) => setTimeout(r, 1500));
      expect(lists()).toBe(settled);
    }, 90_000);

    it('fails over to a second operator process; the standby does nothing until it leads', async () => {
      const [a] = operators;
      if (a === undefined) throw new Error('no operator running');
      const b = startOperator();
      try {
        await b.waitForLog(
          (l) => (l.msg === 'another replica leads; waiting for the Lease' ? true : undefined),
          60_000,
        );
        // Standing by, b has not even listed the Proxies.
        await new Promise((r) => setTimeout(r, 1000));
        expect(lists(b)).toBe(0);
        const killedAt = Date.now();
        a.kill('SIGKILL');
        await a.exit;
        const became = await b.waitForLog(
          (l) => (l.msg === 'became the leader' ? (l.time as number) : undefined),
          60_000,
        );
        // Never before the Lease it last saw renewed has expired (3 s, less a retry period since
        // that renewal and clock granularity); how soon after depends on the machine's load, so
        // it is printed, and only bounded loosely.
        console.log(
          `failover: the standby led ${became - killedAt} ms after the leader was killed`,
        );
        expect(became - killedAt).toBeGreaterThanOrEqual(3000 - 250 - 300);
        expect(became - killedAt).toBeLessThan(30_000);
        await applyAndWait('after-failover');
        expect(lists(b)).toBe(1);
        const order = b.logs.map((l) => l.msg);
        expect(order.indexOf('listed the Proxies')).toBeGreaterThan(
          order.indexOf('became the leader'),
        );
        // SIGTERM: b finishes, releases the Lease and exits 0.
        b.kill('SIGTERM');
        const exit = await b.exit;
        expect(exit.code).toBe(0);
        const lease = await kubectl([
          'get',
          'lease',
          'proxy-op',
          '-n',
          'proxy-op-system',
          '-o',
          'jsonpath={.spec.holderIdentity}',
        ]);
        expect(lease.code).toBe(0);
        expect(lease.stdout).toBe('');
      } finally {
        // A failure above must not leave a leader behind for the next tests.
        for (const op of [a, b]) op.kill('SIGKILL');
        await Promise.all([a.exit, b.exit]);
      }
    }, 180_000);

    /** The reference backend's instances, by name. */
    const instances = async () =>
      (JSON.parse(await readFile(backendFile, 'utf8')) as Array<{ name: string; uid: string }>).map(
        (v) => v.name,
      );

    it('SIGTERM lets a Create in flight finish within the shutdown grace, then releases the Lease', async () => {
      // Every backend call takes 1.5 s: the Create is still under way when kubectl has seen
      // the finalizer, however slowly kubectl starts, and ends well within the 20 s grace.
      const slow = startOperator([], { PROXY_OP_TEST_SLOW_MS: '1500' });
      await slow.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined), 60_000);
      const file = join(home, 'slow.yaml');
      await writeFile(
        file,
        'apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: slow\nspec:\n  provider: lab\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n',
      );
      expect((await kubectl(['apply', '-f', file])).code).toBe(0);
      await until(
        async () =>
          (await kubectl(['get', 'proxy', 'slow', '-o', 'jsonpath={.metadata.finalizers}']))
            .stdout !== '',
        10_000,
        'the finalizer (the Create starts next)',
      );
      slow.kill('SIGTERM');
      const exit = await slow.exit;
      expect(exit.code).toBe(0);
      // The Create finished and its ID was recorded before the process stopped.
      const id = await kubectl(['get', 'proxy', 'slow', '-o', 'jsonpath={.status.providerID}']);
      expect(id.stdout).toMatch(/^vms\/proxy-default-slow-/);
      expect((await instances()).filter((n) => n.startsWith('proxy-default-slow-'))).toHaveLength(
        1,
      );
      const stopped = slow.logs.map((l) => l.msg);
      expect(stopped.indexOf('instance created')).toBeLessThan(stopped.indexOf('proxy-op stopped'));
      expect(stopped).toContain('released the Lease');
    }, 180_000);

    it('SIGTERM past the grace aborts the Create; the next leader resumes it without a second instance', async () => {
      const cut = startOperator(['--shutdown-grace=0'], { PROXY_OP_TEST_SLOW_MS: '1500' });
      await cut.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined), 60_000);
      const file = join(home, 'cut.yaml');
      await writeFile(
        file,
        'apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: cut\nspec:\n  provider: lab\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n',
      );
      expect((await kubectl(['apply', '-f', file])).code).toBe(0);
      await until(
        async () =>
          (await kubectl(['get', 'proxy', 'cut', '-o', 'jsonpath={.metadata.finalizers}']))
            .stdout !== '',
        10_000,
        'the finalizer (the Create starts next)',
      );
      cut.kill('SIGTERM');
      expect((await cut.exit).code).toBe(0);
      // The Create was in flight and was aborted: nothing recorded.
      expect(cut.logs.some((l) => l.msg === 'reconcile failed' && l.proxy === 'default/cut')).toBe(
        true,
      );
      const id = await kubectl(['get', 'proxy', 'cut', '-o', 'jsonpath={.status.providerID}']);
      expect(id.stdout).toBe('');
      const next = startOperator();
      await next.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined), 60_000);
      const w = await kubectl(['wait', '--for=condition=Ready', 'proxy/cut', '--timeout=60s']);
      expect(w.code).toBe(0);
      expect((await instances()).filter((n) => n.startsWith('proxy-default-cut-'))).toHaveLength(1);
      next.kill('SIGTERM');
      expect((await next.exit).code).toBe(0);
    }, 180_000);
  },
);
