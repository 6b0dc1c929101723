// Peer: the real kubectl binary (1.32 on the machine image), with a fresh HOME per test.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers, type ProcessRun, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { parse } from 'yaml';
import { KubeTestServer } from '../src/index.js';
import { call, eventually } from './helpers.js';

const { afterEach, beforeEach, expect, it } = vitest;
const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));
const CRD = join(fixtures, 'widgets-crd.yaml');
const WIDGET = join(fixtures, 'widget-a.yaml');
const W = '/apis/example.com/v1/namespaces/default/widgets';

let server: KubeTestServer;
let home: string;
let kubeconfig: string;

/** Runs kubectl to its end with this test's HOME and kubeconfig. */
function kubectl(args: readonly string[], opts: { token?: string } = {}): Promise<ProcessRun> {
  const env = { HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' };
  return runProcess('kubectl', opts.token === undefined ? args : ['--token', opts.token, ...args], {
    env,
    timeoutMs: 60_000,
  });
}

/** Starts kubectl in the background; `output()` is what it printed so far, `done` its end. */
function kubectlBackground(args: readonly string[]) {
  const child = spawn('kubectl', [...args], {
    env: { ...process.env, HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const done = new Promise<{ code: number | null }>((resolve) =>
    child.on('close', (code) => resolve({ code })),
  );
  return { output: () => stdout, errors: () => stderr, done, kill: () => child.kill('SIGTERM') };
}

async function applyCrd() {
  const r = await kubectl(['apply', '-f', CRD]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toBe(
    'customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n',
  );
}

describeWithPeers(vitest, 'kubectl against the test server', ['kubectl', 'openssl'], () => {
  beforeEach(async () => {
    server = await KubeTestServer.start();
    home = await mkdtemp(join(tmpdir(), 'kube-testserver-home-'));
    kubeconfig = await server.writeKubeconfig(join(home, 'kubeconfig'));
  });

  afterEach(async () => {
    await server.stop();
    await rm(home, { recursive: true, force: true });
  });

  it('applies a CRD, waits for it, and applies a custom object client-side, then server-side', async () => {
    await applyCrd();
    const established = await kubectl([
      'wait',
      '--for=condition=Established',
      'crd/widgets.example.com',
      '--timeout=20s',
    ]);
    expect(established.code).toBe(0);
    expect(established.stdout).toBe(
      'customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met\n',
    );
    const created = await kubectl(['apply', '-f', WIDGET]);
    expect(created.code).toBe(0);
    expect(created.stdout).toBe('widget.example.com/a created\n');
    const unchanged = await kubectl(['apply', '-f', WIDGET]);
    expect(unchanged.stdout).toBe('widget.example.com/a unchanged\n');
    const ssa = await kubectl(['apply', '--server-side', '-f', WIDGET]);
    expect(ssa.stderr).toBe('');
    expect(ssa.code).toBe(0);
    expect(ssa.stdout).toBe('widget.example.com/a serverside-applied\n');
    const live = (await call(server, 'GET', `${W}/a`)).body;
    expect(live.spec).toEqual({ color: 'red', size: 3 });
    expect(
      live.metadata.managedFields.map(
        (m: { manager: string; operation: string }) => `${m.manager}/${m.operation}`,
      ),
    ).toContain('kubectl/Apply');
  });

  it('reports a server-side apply conflict with another manager as kubectl does', async () => {
    await applyCrd();
    await call(server, 'PATCH', `${W}/a?fieldManager=controller`, {
      body: {
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'a' },
        spec: { color: 'blue' },
      },
      contentType: 'application/apply-patch+yaml',
    });
    const r = await kubectl(['apply', '--server-side', '-f', WIDGET]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'Apply failed with 1 conflict: conflict with "controller": .spec.color',
    );
    const forced = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', WIDGET]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toBe('widget.example.com/a serverside-applied\n');
    expect((await call(server, 'GET', `${W}/a`)).body.spec.color).toBe('red');
  });

  it('refuses an invalid object with the message kubectl prints for 422', async () => {
    await applyCrd();
    const bad = join(home, 'bad.yaml');
    await writeFile(
      bad,
      'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  color: pink\n',
    );
    const r = await kubectl(['apply', '-f', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'The Widget "bad" is invalid: spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"',
    );
    const unknown = join(home, 'unknown.yaml');
    await writeFile(
      unknown,
      'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: u\nspec:\n  color: red\n  shade: dark\n',
    );
    const strict = await kubectl(['apply', '-f', unknown]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('strict decoding error: unknown field "spec.shade"');
  });

  it('gets objects as a table, as JSON and as YAML', async () => {
    await applyCrd();
    await kubectl(['apply', '-f', WIDGET]);
    const table = await kubectl(['get', 'widgets']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]?.split(/\s+/)).toEqual(['NAME', 'SIZE', 'PHASE', 'AGE']);
    expect(lines[1]).toMatch(/^a\s+3\s+\d+s$/);
    const json = await kubectl(['get', 'widget', 'a', '-o', 'json']);
    expect(json.code).toBe(0);
    const obj = JSON.parse(json.stdout);
    expect(obj).toMatchObject({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'a', namespace: 'default', generation: 1 },
    });
    const yaml = await kubectl(['get', 'wd', 'a', '-o', 'yaml']);
    expect(parse(yaml.stdout).spec).toEqual({ color: 'red', size: 3 });
    const cms = await kubectl(['get', 'configmaps', '-A']);
    expect(cms.code).toBe(0);
    expect(cms.stderr).toBe('No resources found\n');
    const missing = await kubectl(['get', 'widget', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'Error from server (NotFound): widgets.example.com "nope" not found\n',
    );
  });

  it('streams changes with get --watch', async () => {
    await applyCrd();
    await kubectl(['apply', '-f', WIDGET]);
    const watch = kubectlBackground(['get', 'widgets', '--watch', '--output-watch-events']);
    await eventually(() => watch.output().includes('ADDED'), 20_000);
    await call(server, 'PATCH', `${W}/a/status`, {
      body: { status: { phase: 'Running' } },
      contentType: 'application/merge-patch+json',
    });
    await eventually(() => /MODIFIED\s+a\s+3\s+Running/.test(watch.output()), 20_000);
    watch.kill();
    await watch.done;
    const lines = watch.output().trimEnd().split('\n');
    expect(lines[0]?.split(/\s+/)).toEqual(['EVENT', 'NAME', 'SIZE', 'PHASE', 'AGE']);
    expect(lines[1]).toMatch(/^ADDED\s+a\s+3\s+\d+s$/);
  });

  it('waits for a Ready condition set through the status subresource', async () => {
    await applyCrd();
    await kubectl(['apply', '-f', WIDGET]);
    const wait = kubectlBackground(['wait', '--for=condition=Ready', 'widget/a', '--timeout=30s']);
    await eventually(
      () => server.counters.count({ verb: 'watch', resource: 'widgets' }) > 0,
      20_000,
    );
    await call(server, 'PATCH', `${W}/a/status`, {
      body: {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'Done',
              message: 'ok',
              lastTransitionTime: '2025-01-01T00:00:00Z',
            },
          ],
        },
      },
      contentType: 'application/merge-patch+json',
    });
    expect((await wait.done).code).toBe(0);
    expect(wait.output()).toBe('widget.example.com/a condition met\n');
  });

  it('patches with --type=merge and --type=json, and says when nothing changed', async () => {
    await applyCrd();
    await kubectl(['apply', '-f', WIDGET]);
    const merge = await kubectl([
      'patch',
      'widget',
      'a',
      '--type=merge',
      '-p',
      '{"spec":{"size":5}}',
    ]);
    expect(merge.code).toBe(0);
    expect(merge.stdout).toBe('widget.example.com/a patched\n');
    const json = await kubectl([
      'patch',
      'widget',
      'a',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/color","value":"green"}]',
    ]);
    expect(json.code).toBe(0);
    expect(json.stdout).toBe('widget.example.com/a patched\n');
    const same = await kubectl([
      'patch',
      'widget',
      'a',
      '--type=merge',
      '-p',
      '{"spec":{"size":5}}',
    ]);
    expect(same.stdout).toBe('widget.example.com/a patched (no change)\n');
    const live = (await call(server, 'GET', `${W}/a`)).body;
    expect(live.spec).toEqual({ color: 'green', size: 5 });
    expect(live.metadata.generation).toBe(3);
    const strategic = await kubectl(['patch', 'widget', 'a', '-p', '{"spec":{"size":6}}']);
    expect(strategic.code).toBe(1);
    expect(strategic.stderr).toBe(
      'error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml\n',
    );
  });

  it('delete waits for a finalizer to be removed', async () => {
    await applyCrd();
    await kubectl(['apply', '-f', WIDGET]);
    await call(server, 'PATCH', `${W}/a`, {
      body: { metadata: { finalizers: ['example.com/cleanup'] } },
      contentType: 'application/merge-patch+json',
    });
    const del = kubectlBackground(['delete', 'widget', 'a', '--timeout=30s']);
    await eventually(
      async () =>
        (await call(server, 'GET', `${W}/a`)).body.metadata.deletionTimestamp !== undefined,
      20_000,
    );
    await eventually(
      () => server.counters.count({ verb: 'watch', resource: 'widgets' }) > 0,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(del.output()).toBe('widget.example.com "a" deleted\n');
    let exited = false;
    void del.done.then(() => {
      exited = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(exited).toBe(false);
    await call(server, 'PATCH', `${W}/a`, {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    expect((await del.done).code).toBe(0);
    expect(del.errors()).toBe('');
  });

  it('applies a built-in with a strategic merge patch, and is forbidden by RBAC for a service account', async () => {
    const cm = join(home, 'cm.yaml');
    await writeFile(
      cm,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: "1"\n',
    );
    expect((await kubectl(['apply', '-f', cm])).stdout).toBe('configmap/settings created\n');
    await writeFile(
      cm,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  b: "2"\n',
    );
    server.counters.reset();
    const configured = await kubectl(['apply', '-f', cm]);
    expect(configured.stdout).toBe('configmap/settings configured\n');
    expect(server.counters.count({ verb: 'patch', resource: 'configmaps' })).toBe(1);
    expect(
      (await call(server, 'GET', '/api/v1/namespaces/default/configmaps/settings')).body.data,
    ).toEqual({ b: '2' });
    const token = server.serviceAccountToken('default', 'viewer');
    const denied = await kubectl(['get', 'configmaps'], { token });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toBe(
      'Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:default:viewer" cannot list resource "configmaps" in API group "" in the namespace "default"\n',
    );
  });
  // Nine kubectl runs: each starts a Go binary, which takes seconds on a loaded machine.
  it('enforces a ResourceQuota on pods as the admission plugin does, in its words', {
    timeout: 120_000,
  }, async () => {
    const file = (name: string, text: string) => {
      const f = join(home, name);
      return writeFile(f, text).then(() => f);
    };
    const quota = await file(
      'quota.yaml',
      'apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: compute\nspec:\n  hard:\n    pods: "1"\n    requests.cpu: 500m\n    limits.memory: 1Gi\n',
    );
    const pod = (name: string, resources: string) =>
      file(
        `${name}.yaml`,
        `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: squid:6\n${resources}`,
      );
    const sized =
      '      resources:\n        requests:\n          cpu: 100m\n        limits:\n          memory: 128Mi\n';
    expect((await kubectl(['apply', '-f', quota])).stdout).toBe('resourcequota/compute created\n');
    const used = async () =>
      (await kubectl(['get', 'quota', 'compute', '-o', 'jsonpath={.status.used}'])).stdout;
    await server.settled();
    expect(JSON.parse(await used())).toEqual({
      'limits.memory': '0',
      pods: '0',
      'requests.cpu': '0',
    });

    const a = await kubectl(['apply', '-f', await pod('a', sized)]);
    expect(a.stdout).toBe('pod/a created\n');
    expect(JSON.parse(await used())).toEqual({
      'limits.memory': '128Mi',
      pods: '1',
      'requests.cpu': '100m',
    });
    const table = await kubectl(['get', 'quota']);
    expect(table.stdout).toContain('limits.memory: 128Mi/1Gi');
    expect(table.stdout).toContain('pods: 1/1, requests.cpu: 100m/500m');

    // The quota is full: the next pod is refused before its name is looked at.
    const b = await kubectl(['apply', '-f', await pod('b', sized)]);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain(
      'pods "b" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1\n',
    );
    // A container that leaves out what the quota restricts is refused first.
    const bare = await kubectl(['apply', '-f', await pod('c', '')]);
    expect(bare.stderr).toContain(
      'pods "c" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app\n',
    );
    // A dry run is checked but not charged.
    const dry = await kubectl(['apply', '--dry-run=server', '-f', await pod('d', sized)]);
    expect(dry.stderr).toContain('pods "d" is forbidden: exceeded quota: compute');

    // Deleting the pod gives its share back; the next pod fits.
    expect((await kubectl(['delete', 'pod', 'a', '--wait=true'])).code).toBe(0);
    await server.settled();
    expect(JSON.parse(await used())).toEqual({
      'limits.memory': '0',
      pods: '0',
      'requests.cpu': '0',
    });
    expect((await kubectl(['apply', '-f', await pod('b', sized)])).stdout).toBe('pod/b created\n');
  });
});
