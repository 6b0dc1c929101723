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

type Printed = { metadata: Record<string, unknown>; [field: string]: unknown };

/** An object as kubectl prints it, less what only the server sets and the test cannot know. */
function withoutServerFields(o: Printed): Printed {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, ...metadata } = o.metadata;
  return { ...o, metadata };
}

/**
 * Runs `kubectl create <args>` (a protobuf body), then reads the object
 * back with `get -o json` and holds it to what `--dry-run=client -o json`
 * printed for the same command (the object kubectl meant to send) with
 * `set`, what the server adds, over it.
 */
async function createAndGet(args: readonly string[], line: string, set: Record<string, unknown>) {
  const planned = await kubectl(['create', ...args, '--dry-run=client', '-o', 'json']);
  expect(planned.code).toBe(0);
  const created = await kubectl(['create', ...args]);
  expect(created.stderr).toBe('');
  expect(created.stdout).toBe(`${line} created\n`);
  const [kind, name] = line.split('/') as [string, string];
  const got = await kubectl(['get', kind, name, '-o', 'json']);
  expect(got.code).toBe(0);
  const expected = withoutServerFields(JSON.parse(planned.stdout));
  const live = JSON.parse(got.stdout);
  expect(withoutServerFields(live)).toEqual({ ...expected, ...set });
  return { expected, live };
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
  // kubectl's create subcommands send protobuf bodies (Content-Type
  // application/vnd.kubernetes.protobuf) and accept protobuf or JSON answers.
  it('creates a namespace and a service account from protobuf bodies, as kubectl planned them', {
    timeout: 120_000,
  }, async () => {
    const ns = await createAndGet(['namespace', 'probe'], 'namespace/probe', {
      metadata: { name: 'probe', labels: { 'kubernetes.io/metadata.name': 'probe' } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
    const yaml = await kubectl(['get', 'namespace', 'probe', '-o', 'yaml']);
    expect(parse(yaml.stdout)).toEqual(ns.live);
    await createAndGet(['serviceaccount', 'sa'], 'serviceaccount/sa', {
      metadata: { name: 'sa', namespace: 'default' },
    });
  });

  it('creates a configmap from literals and files (text and binary) from a protobuf body', {
    timeout: 120_000,
  }, async () => {
    const conf = join(home, 'app.conf');
    const blob = join(home, 'blob.bin');
    await writeFile(conf, 'x=1\n');
    await writeFile(blob, Buffer.from([0xff, 0x00, 0xfe]));
    const cm = await createAndGet(
      ['configmap', 'x', '--from-literal=a=b', `--from-file=${conf}`, `--from-file=${blob}`],
      'configmap/x',
      { metadata: { name: 'x', namespace: 'default' } },
    );
    expect(cm.expected).toMatchObject({
      data: { a: 'b', 'app.conf': 'x=1\n' },
      binaryData: { 'blob.bin': '/wD+' },
    });
    const yaml = await kubectl(['get', 'configmap', 'x', '-o', 'yaml']);
    expect(parse(yaml.stdout)).toEqual(cm.live);
    const managers = await kubectl([
      'get',
      'configmap',
      'x',
      '--show-managed-fields',
      '-o',
      'jsonpath={.metadata.managedFields[*].manager}',
    ]);
    expect(managers.stdout).toBe('kubectl-create');
  });

  it('creates a generic secret from a protobuf body: data is base64 of the value, and get -o yaml round-trips', {
    timeout: 120_000,
  }, async () => {
    const value = 'not-a-real-password';
    const secret = await createAndGet(
      ['secret', 'generic', 's', `--from-literal=password=${value}`],
      'secret/s',
      {
        metadata: { name: 's', namespace: 'default' },
        type: 'Opaque',
      },
    );
    expect(secret.live.data.password).toBe(Buffer.from(value).toString('base64'));
    const yaml = await kubectl(['get', 'secret', 's', '-o', 'yaml']);
    expect(parse(yaml.stdout)).toEqual(secret.live);
    // The YAML goes back as it came (replace sends it whole, resourceVersion included).
    const file = join(home, 'secret.yaml');
    await writeFile(file, yaml.stdout);
    const replaced = await kubectl(['replace', '-f', file]);
    expect(replaced.stderr).toBe('');
    expect(replaced.stdout).toBe('secret/s replaced\n');
    const again = JSON.parse((await kubectl(['get', 'secret', 's', '-o', 'json'])).stdout);
    expect(again.data).toEqual({ password: Buffer.from(value).toString('base64') });
    expect(again.metadata.uid).toBe(secret.live.metadata.uid);
  });

  it('dry-runs a protobuf create on the server without storing it', {
    timeout: 120_000,
  }, async () => {
    const dry = await kubectl([
      'create',
      'configmap',
      'd',
      '--from-literal=k=v',
      '--dry-run=server',
    ]);
    expect(dry.stderr).toBe('');
    expect(dry.stdout).toBe('configmap/d created (server dry run)\n');
    const printed = await kubectl([
      'create',
      'secret',
      'generic',
      'd',
      '--from-literal=k=v',
      '--dry-run=server',
      '-o',
      'json',
    ]);
    expect(JSON.parse(printed.stdout)).toMatchObject({
      kind: 'Secret',
      metadata: { name: 'd', namespace: 'default' },
      data: { k: 'dg==' },
      type: 'Opaque',
    });
    const missing = await kubectl(['get', 'configmap', 'd']);
    expect(missing.stderr).toBe('Error from server (NotFound): configmaps "d" not found\n');
    expect((await kubectl(['get', 'secret', 'd'])).code).toBe(1);
  });

  it('creates roles and bindings from protobuf bodies, and the bindings grant what the roles name', {
    timeout: 120_000,
  }, async () => {
    const token = server.serviceAccountToken('default', 'viewer');
    expect((await kubectl(['get', 'configmaps'], { token })).code).toBe(1);
    await createAndGet(
      ['role', 'reader', '--verb=get,list', '--resource=configmaps'],
      'role.rbac.authorization.k8s.io/reader',
      {
        metadata: { name: 'reader', namespace: 'default' },
      },
    );
    await createAndGet(
      ['rolebinding', 'read', '--role=reader', '--serviceaccount=default:viewer'],
      'rolebinding.rbac.authorization.k8s.io/read',
      {
        metadata: { name: 'read', namespace: 'default' },
      },
    );
    const allowed = await kubectl(['get', 'configmaps'], { token });
    expect(allowed.stderr).toBe('No resources found in default namespace.\n');
    expect(allowed.code).toBe(0);

    await createAndGet(
      ['clusterrole', 'ns-reader', '--verb=get', '--resource=namespaces'],
      'clusterrole.rbac.authorization.k8s.io/ns-reader',
      {
        metadata: { name: 'ns-reader' },
      },
    );
    await createAndGet(
      [
        'clusterrolebinding',
        'ns-read',
        '--clusterrole=ns-reader',
        '--serviceaccount=default:viewer',
      ],
      'clusterrolebinding.rbac.authorization.k8s.io/ns-read',
      { metadata: { name: 'ns-read' } },
    );
    const ns = await kubectl(['get', 'namespace', 'default', '-o', 'name'], { token });
    expect(ns.stdout).toBe('namespace/default\n');
    // An aggregated ClusterRole has no rules of its own: Go writes them as null.
    const aggregated = await createAndGet(
      ['clusterrole', 'agg', '--aggregation-rule=a=b'],
      'clusterrole.rbac.authorization.k8s.io/agg',
      { metadata: { name: 'agg' } },
    );
    expect(aggregated.expected.rules).toBeNull();
  });

  it('says which kind it cannot decode when kubectl create sends another one', async () => {
    const r = await kubectl(['create', 'quota', 'q', '--hard=pods=1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: failed to create quota: the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (application/vnd.kubernetes.protobuf is decoded by this test server only for v1 ConfigMap, v1 Namespace, v1 Secret, v1 ServiceAccount, rbac.authorization.k8s.io/v1 ClusterRole, rbac.authorization.k8s.io/v1 ClusterRoleBinding, rbac.authorization.k8s.io/v1 Role, rbac.authorization.k8s.io/v1 RoleBinding; not for v1 ResourceQuota)\n',
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
