// Peer: the real kubectl binary (1.32 on the machine image) against the server's apps/v1
// Deployments: what it prints, and what it is refused, in kube-apiserver's words.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithPeers, type ProcessRun, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { KubeTestServer } from '../src/index.js';
import { call } from './helpers.js';

const { afterAll, beforeAll, expect, it } = vitest;

let server: KubeTestServer;
let home: string;
let kubeconfig: string;

function kubectl(args: readonly string[]): Promise<ProcessRun> {
  const env = { HOME: home, KUBECONFIG: kubeconfig, KUBECTL_KUBERC: 'false' };
  return runProcess('kubectl', args, { env, timeoutMs: 60_000 });
}

function deployment(name: string, selector: string, label: string, image = 'proxy-op:dev'): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels:
      app: ${selector}
  template:
    metadata:
      labels:
        app: ${label}
    spec:
      containers:
        - name: gateway
          image: ${image}
          args: [gateway, --upstreams, /etc/proxy-op/pool/upstreams.json]
`;
}

async function apply(yaml: string): Promise<ProcessRun> {
  const file = join(home, `manifest-${Date.now()}-${Math.random()}.yaml`);
  await writeFile(file, yaml);
  return kubectl(['apply', '-f', file]);
}

describeWithPeers(vitest, 'apps/v1 Deployments held to kubectl', ['kubectl'], () => {
  beforeAll(async () => {
    server = await KubeTestServer.start();
    home = await mkdtemp(join(tmpdir(), 'kube-testserver-apps-'));
    kubeconfig = await server.writeKubeconfig(join(home, 'kubeconfig'));
  });
  afterAll(async () => {
    await server?.stop();
    await rm(home, { recursive: true, force: true });
  });

  it('applies a Deployment, defaults it, and prints its columns (wide too)', async () => {
    const r = await apply(deployment('gw', 'gw', 'gw'));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('deployment.apps/gw created\n');
    const again = await apply(deployment('gw', 'gw', 'gw'));
    expect(again.stdout).toBe('deployment.apps/gw unchanged\n');
    const got = await kubectl(['get', 'deploy', 'gw']);
    expect(got.stdout.split('\n')[0]).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/);
    expect(got.stdout.split('\n')[1]).toMatch(/^gw\s+0\/2\s+0\s+0\s+\d+s$/);
    const wide = await kubectl(['get', 'deployments.apps', '-o', 'wide']);
    expect(wide.stdout.split('\n')[1]).toMatch(/\sgateway\s+proxy-op:dev\s+app=gw$/);
    const live = (await call(server, 'GET', '/apis/apps/v1/namespaces/default/deployments/gw'))
      .body;
    expect(live.metadata.generation).toBe(1);
    expect(live.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
    });
    expect(live.spec.revisionHistoryLimit).toBe(10);
    expect(live.spec.progressDeadlineSeconds).toBe(600);
    expect(live.spec.template.spec.restartPolicy).toBe('Always');
    // A spec change bumps the generation; the image is changed in place.
    const changed = await apply(deployment('gw', 'gw', 'gw', 'proxy-op:next'));
    expect(changed.stdout).toBe('deployment.apps/gw configured\n');
    const after = (await call(server, 'GET', '/apis/apps/v1/namespaces/default/deployments/gw'))
      .body;
    expect(after.metadata.generation).toBe(2);
    expect(after.spec.template.spec.containers).toHaveLength(1);
    expect(after.spec.template.spec.containers[0].image).toBe('proxy-op:next');
    const all = await kubectl(['get', 'all']);
    expect(all.stdout).toContain('deployment.apps/gw');
  });

  it('refuses a selector that does not match the template, a missing one, and a changed one', async () => {
    const mismatch = await apply(deployment('bad', 'bad', 'other'));
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toContain(
      'The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`',
    );
    const none = await apply(
      deployment('none', 'x', 'x').replace('  selector:\n    matchLabels:\n      app: x\n', ''),
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(
      'The Deployment "none" is invalid: spec.selector: Required value',
    );
    expect((await apply(deployment('moved', 'a', 'a'))).code).toBe(0);
    const moved = await apply(
      deployment('moved', 'b', 'a').replace(
        'app: a\n    spec',
        'app: a\n        extra: b\n    spec',
      ),
    );
    expect(moved.code).toBe(1);
    expect(moved.stderr).toContain('spec.selector: Invalid value:');
    expect(moved.stderr).toContain('field is immutable');
  });
});
