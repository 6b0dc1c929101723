// Peer: the real kubectl binary (1.32 on the machine image), with a fresh HOME per test, on the scale
// subresource of a custom resource.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers, type ProcessRun, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { KubeTestServer } from '../src/index.js';
import { call, openWatch } from './helpers.js';

const { afterEach, beforeEach, expect, it } = vitest;
const fixtures = fileURLToPath(new URL('fixtures/', import.meta.url));
const C = '/apis/example.com/v1/namespaces/default/crews';

let server: KubeTestServer;
let home: string;
let kubeconfig: string;

/** Runs kubectl to its end with this test's HOME and kubeconfig. */
function kubectl(args: readonly string[]): Promise<ProcessRun> {
  return runProcess('kubectl', args, {
    env: { HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' },
    timeoutMs: 60_000,
  });
}

/** The crews CRD and crew `a` (2 members), applied with kubectl. */
async function applyCrew() {
  const crd = await kubectl(['apply', '-f', join(fixtures, 'crews-crd.yaml')]);
  expect(crd.stderr).toBe('');
  const created = await kubectl(['apply', '-f', join(fixtures, 'crew-a.yaml')]);
  expect(created.stderr).toBe('');
  expect(created.stdout).toBe('crew.example.com/a created\n');
}

/** The writes to crews since the counters were reset, as `verb/subresource`. */
function crewWrites(): string[] {
  return server.counters
    .all()
    .filter(
      (c) => c.resource === 'crews' && ['create', 'update', 'patch', 'delete'].includes(c.verb),
    )
    .map((c) => `${c.verb}/${c.subresource}`);
}

async function members(): Promise<unknown> {
  return (await call(server, 'GET', `${C}/a`)).body.spec.members;
}

describeWithPeers(vitest, 'kubectl on the scale subresource', ['kubectl', 'openssl'], () => {
  beforeEach(async () => {
    server = await KubeTestServer.start();
    home = await mkdtemp(join(tmpdir(), 'kube-testserver-home-'));
    kubeconfig = await server.writeKubeconfig(join(home, 'kubeconfig'));
  });

  afterEach(async () => {
    await server.stop();
    await rm(home, { recursive: true, force: true });
  });

  it('scales a custom resource through /scale, which writes only its replicas path', async () => {
    await applyCrew();
    const before = (await call(server, 'GET', `${C}/a`)).body;
    const w = openWatch(
      server,
      `${C}?watch=true&resourceVersion=${before.metadata.resourceVersion}`,
    );
    server.counters.reset();
    const r = await kubectl(['scale', 'crew/a', '--replicas=5']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('crew.example.com/a scaled\n');
    expect(crewWrites()).toEqual(['patch/scale']);
    const after = (await call(server, 'GET', `${C}/a`)).body;
    expect(after.spec).toEqual({ members: 5, role: 'cook' });
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    await w.waitFor(1);
    w.stop();
    expect(w.events.map((e) => [e.type, e.object.spec.members])).toEqual([['MODIFIED', 5]]);
  });

  it('gets the Scale with --subresource=scale, as JSON and as a table', async () => {
    await applyCrew();
    await call(server, 'PATCH', `${C}/a/status`, {
      contentType: 'application/merge-patch+json',
      body: { status: { readyMembers: 1, selector: 'crew=a' } },
    });
    const live = (await call(server, 'GET', `${C}/a`)).body;
    const json = await kubectl(['get', 'crew/a', '--subresource=scale', '-o', 'json']);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toEqual({
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: {
        name: 'a',
        namespace: 'default',
        uid: live.metadata.uid,
        resourceVersion: live.metadata.resourceVersion,
        creationTimestamp: live.metadata.creationTimestamp,
      },
      spec: { replicas: 2 },
      status: { replicas: 1, selector: 'crew=a' },
    });
    const table = await kubectl(['get', 'crew', 'a', '--subresource=scale']);
    expect(table.stderr).toBe('');
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]?.split(/\s+/)).toEqual(['NAME', 'DESIRED', 'AVAILABLE', 'AGE']);
    expect(lines[1]).toMatch(/^a\s+2\s+1\s+\d+s$/);
  });

  it('refuses --current-replicas that do not match as kubectl reports it, and scales when they do', async () => {
    await applyCrew();
    server.counters.reset();
    const mismatch = await kubectl(['scale', 'crew/a', '--current-replicas=3', '--replicas=1']);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toBe('error: Expected replicas to be 3, was 2\n');
    expect(crewWrites()).toEqual([]);
    expect(await members()).toBe(2);
    const matching = await kubectl(['scale', 'crew/a', '--current-replicas=2', '--replicas=1']);
    expect(matching.stderr).toBe('');
    expect(matching.stdout).toBe('crew.example.com/a scaled\n');
    expect(crewWrites()).toEqual(['update/scale']);
    expect(await members()).toBe(1);
  });

  it('patches the Scale with kubectl patch --subresource=scale, and reports a stale resourceVersion', async () => {
    await applyCrew();
    const merge = await kubectl([
      'patch',
      'crew',
      'a',
      '--subresource=scale',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":4}}',
    ]);
    expect(merge.stderr).toBe('');
    // kubectl names what the server answered: the Scale.
    expect(merge.stdout).toBe('scale.autoscaling/a patched\n');
    expect(await members()).toBe(4);
    const json = await kubectl([
      'patch',
      'crew',
      'a',
      '--subresource=scale',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/replicas","value":0}]',
    ]);
    expect(json.stdout).toBe('scale.autoscaling/a patched\n');
    expect(await members()).toBe(0);
    const stale = await kubectl([
      'patch',
      'crew',
      'a',
      '--subresource=scale',
      '--type=merge',
      '-p',
      '{"metadata":{"resourceVersion":"1"},"spec":{"replicas":3}}',
    ]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toBe(
      'Error from server (Conflict): Operation cannot be fulfilled on crews.example.com "a": the object has been modified; please apply your changes to the latest version and try again\n',
    );
    const negative = await kubectl([
      'patch',
      'crew',
      'a',
      '--subresource=scale',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":-1}}',
    ]);
    expect(negative.code).toBe(1);
    expect(negative.stderr).toBe(
      'The Crew "a" is invalid: .spec.members: Invalid value: -1: should be a non-negative integer\n',
    );
    // kubectl scale reads the object first; kubectl get reads the Scale itself.
    const unscalable = await kubectl(['scale', 'crew/nobody', '--replicas=1']);
    expect(unscalable.code).toBe(1);
    expect(unscalable.stderr).toBe(
      'error: no objects passed to scale crews.example.com "nobody" not found\n',
    );
    server.counters.reset();
    const missing = await kubectl(['get', 'crew/nobody', '--subresource=scale']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'Error from server (NotFound): crews.example.com "nobody" not found\n',
    );
    expect(server.counters.count({ resource: 'crews', subresource: 'scale' })).toBe(1);
  });
});
