// Peer: the Kubernetes API test server, through the real @kubernetes/client-node, behind the HTTPS
// front of test/support; the harness plays scheduler and kubelet. What the conformance kit does not
// look at: the Pod as stored, write budgets, quota and RBAC refusals, OwnerReferences with the
// server's garbage collector, deletes in progress, Checker details, span and log names.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CreateRequest, createProvider, isNotFound, REDACTED } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { afterEach, describe, expect, it } from 'vitest';
import { providerModule } from '../src/module.js';
import { SQUID_CONF_ANNOTATION } from '../src/pod.js';
import { admin, adminOk, podPath } from './support/admin.js';
import {
  createKubeFixture,
  ensureNamespace,
  grantProviderRole,
  type KubeFixture,
  kubeconfigText,
  OPERATOR_NAMESPACE,
  providerRole,
} from './support/fixture.js';
import { lifecycle } from './support/lifecycle.js';

let fixtures: KubeFixture[] = [];
afterEach(async () => {
  for (const f of fixtures) await f.cleanup?.();
  fixtures = [];
});

async function fixture(
  opts: Parameters<typeof createKubeFixture>[1] = {},
  deps: Parameters<typeof createKubeFixture>[0] = {},
): Promise<KubeFixture> {
  const f = await createKubeFixture(deps, opts);
  fixtures.push(f);
  return f;
}

let n = 0;
function request(patch: Partial<CreateRequest> = {}): CreateRequest {
  n++;
  return {
    name: `proxy-t-${n}`,
    namespace: 'default',
    uid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { zone: 'zone-a', machineType: 'small', image: 'squid' },
    ...patch,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: stored objects are read as plain JSON
type Json = any;

function storedPod(f: KubeFixture, namespace: string, name: string): Json {
  return f.server.objects('', 'pods', namespace).find((p) => (p.metadata as Json).name === name);
}

describe('Create', () => {
  it('makes one write: a read, then one Pod create; a repeat Create writes nothing', async () => {
    const f = await fixture();
    f.front.onPodCreated = undefined; // no scheduler: only the provider's requests are counted
    f.server.counters.reset();
    const before = f.front.count;
    const req = request();
    const id = await f.provider.create(req);
    expect(f.front.count - before, 'requests of a new Create').toBe(2);
    expect(f.server.counters.writes({ resource: 'pods' }), 'Pod writes of a new Create').toBe(1);
    expect(f.server.counters.count({ verb: 'create', resource: 'pods' })).toBe(1);
    f.server.counters.reset();
    expect(await f.provider.create(req)).toBe(id);
    expect(f.server.counters.writes(), 'writes of a repeat Create').toBe(0);
    expect(f.server.counters.count(), 'requests of a repeat Create').toBe(1);
  });

  it('stores a hardened Pod that uses the placement and the Proxy sources', async () => {
    const f = await fixture();
    const req = request({
      port: 8080,
      placement: { zone: 'zone-b', machineType: 'large', image: 'squid' },
      allowedSources: ['192.168.10.0/24', '10.20.0.0/16'],
    });
    const id = await f.provider.create(req);
    expect(id).toBe(`default/${req.name}`);
    const pod = storedPod(f, 'default', req.name);
    expect(pod.metadata.annotations[SQUID_CONF_ANNOTATION]).toBe(
      renderSquidConfig({
        port: 8080,
        allowedSources: ['192.168.10.0/24', '10.20.0.0/16'],
        connectPorts: [443],
      }),
    );
    expect(pod.metadata.labels['proxy-operator-uid']).toBe(req.uid);
    const c = pod.spec.containers[0];
    expect(c.image).toBe('docker.io/ubuntu/squid:6.10-24.10_beta');
    expect(c.resources).toEqual({
      requests: { cpu: '500m', memory: '512Mi' },
      limits: { memory: '512Mi', cpu: '1' },
    });
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    expect(c.ports).toEqual([{ name: 'proxy', containerPort: 8080, protocol: 'TCP' }]);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    expect(pod.spec.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-b'] },
          ],
        },
      ],
    });
  });

  it("renders the request's destination policy into the Pod's Squid configuration", async () => {
    const f = await fixture();
    const egress = {
      allow: ['10.20.0.7:5432', 'metrics.internal.example'],
      connectPorts: [443, 8443],
    };
    const req = request({ allowedSources: ['10.0.0.0/8'], egress });
    await f.provider.create(req);
    const conf: string = storedPod(f, 'default', req.name).metadata.annotations[
      SQUID_CONF_ANNOTATION
    ];
    // The request's CONNECT ports take the place of the provider's connectPorts ([443]).
    expect(conf).toBe(renderSquidConfig({ port: 3128, allowedSources: ['10.0.0.0/8'], egress }));
    expect(conf).toContain('\nacl proxy_op_allow_1 dst 10.20.0.7/32 ');
    expect(conf).toContain('\nacl proxy_op_allow_1_port port 5432\n');
    expect(conf).toContain('\nacl proxy_op_allow_names dstdomain -n metrics.internal.example\n');
    expect(conf).toContain('\nacl proxy_op_connect_ports port 443 8443\n');
    // Without one, the provider's connectPorts and the safe defaults.
    const plain = request({ allowedSources: ['10.0.0.0/8'] });
    await f.provider.create(plain);
    const defaults: string = storedPod(f, 'default', plain.name).metadata.annotations[
      SQUID_CONF_ANNOTATION
    ];
    expect(defaults).toBe(
      renderSquidConfig({ port: 3128, allowedSources: ['10.0.0.0/8'], connectPorts: [443] }),
    );
    expect(defaults).not.toContain('proxy_op_allow_');
  });

  it('refuses, before any request, a request without sources when none are configured', async () => {
    const f = await fixture({ config: { allowedSources: [] } });
    const before = f.front.count;
    const err = await f.provider.create(request()).catch((e: unknown) => e);
    expect((err as { code: string }).code).toBe('PROVIDER_PERMANENT');
    expect((err as Error).message).toContain('names no allowedSources');
    expect(f.front.count).toBe(before);
  });

  it('tells a quota 403 (QuotaExceeded) from an RBAC 403 (Permanent, naming the Role)', async () => {
    const f = await fixture();
    await f.provider.create(request());
    f.harness.exhaustCapacity?.();
    const quota = await f.provider.create(request()).catch((e: unknown) => e);
    expect((quota as { errorClass: string }).errorClass).toBe('QuotaExceeded');
    expect((quota as Error).message).toMatch(
      /^pods "proxy-t-\d+" is forbidden: exceeded quota: proxy-quota, requested: pods=1, used: pods=1, limited: pods=1 \(403 Forbidden\)$/,
    );

    await writeFile(
      f.tokenFile,
      `${f.server.serviceAccountToken(OPERATOR_NAMESPACE, 'unbound')}\n`,
    );
    const rbac = await f.provider.create(request()).catch((e: unknown) => e);
    expect((rbac as { errorClass: string }).errorClass).toBe('Permanent');
    expect((rbac as Error).message).toBe(
      'pods "proxy-t-' +
        String(n) +
        '" is forbidden: User "system:serviceaccount:proxy-op:unbound" cannot get resource "pods" in API group "" in the namespace "default"; grant the rules of rbac/role.yaml of @proxy-op/provider-kubernetes (403 Forbidden)',
    );
  });

  it('adopts nothing that is being deleted, and creates again once it is gone', async () => {
    const f = await fixture();
    const req = request();
    const id = await f.provider.create(req);
    await f.provider.delete(id);
    const err = await f.provider.create(req).catch((e: unknown) => e);
    expect((err as { errorClass: string }).errorClass).toBe('Transient');
    expect((err as Error).message).toContain('is being deleted');
    await f.kubelet.settle();
    expect(await f.provider.create(req)).toBe(id);
    expect(storedPod(f, 'default', req.name).metadata.deletionTimestamp).toBeUndefined();
  });

  it('is Transient in a namespace that does not exist', async () => {
    const f = await fixture();
    const err = await f.provider.create(request({ namespace: 'nowhere' })).catch((e: unknown) => e);
    expect((err as { errorClass: string }).errorClass).toBe('Transient');
    expect((err as Error).message).toContain('namespaces "nowhere" not found');
  });
});

describe('Get and Delete', () => {
  it('a Pod being deleted is Terminated, never Running, until it is gone', async () => {
    const f = await fixture();
    const id = await f.provider.create(request());
    await f.harness.setRunning(id, '10.1.2.3');
    expect(await f.provider.get(id)).toMatchObject({ state: 'Running', ip: '10.1.2.3' });
    await f.provider.delete(id);
    const deleting = await f.provider.get(id);
    expect(deleting.state).toBe('Terminated');
    expect(deleting.ip).toBeUndefined();
    // The kubelet still reports the containers running while they stop.
    await f.harness.setRunning(id, '10.1.2.3');
    expect((await f.provider.get(id)).state).toBe('Terminated');
    await f.kubelet.settle();
    expect(await f.provider.get(id).catch(isNotFound)).toBe(true);
  });

  it("reports the zone the Pod's affinity pins it to, from Get and ListByTag alike, reading no Node", async () => {
    const f = await fixture();
    const inZone = await f.provider.create(
      request({ placement: { zone: 'zone-b', machineType: 'small', image: 'squid' } }),
    );
    const anywhere = await f.provider.create(
      request({ placement: { machineType: 'small', image: 'squid' } }),
    );
    await f.harness.setRunning(inZone, '10.1.2.4');
    await f.harness.setRunning(anywhere, '10.1.2.5');
    f.server.counters.reset();
    const before = f.front.count;
    const got = await f.provider.get(inZone);
    expect(got).toMatchObject({ state: 'Running', location: { zone: 'zone-b' } });
    expect(got.location).toEqual({ zone: 'zone-b' });
    expect((await f.provider.get(anywhere)).location).toBeUndefined();
    const listed = await f.provider.listByTag();
    expect(listed.find((i) => i.id === inZone)?.location).toEqual({ zone: 'zone-b' });
    expect(listed.find((i) => i.id === anywhere)).not.toHaveProperty('location');
    expect(f.front.count - before, 'two Gets and one listing').toBe(3);
    expect(f.server.counters.count({ resource: 'nodes' }), 'Node requests').toBe(0);
  });

  it('deletes only the Pod it read: a Pod that took the name meanwhile stays', async () => {
    const f = await fixture();
    const req = request();
    const id = await f.provider.create(req);
    const gate = f.front.holdNextDelete(podPath('default', req.name));
    const deleting = f.provider.delete(id);
    deleting.catch(() => {});
    await gate.reached;
    await f.harness.replaceInstance(id, { uid: req.uid, installation: 'default' });
    const replacement = storedPod(f, 'default', req.name).metadata.uid;
    gate.release();
    const err = await deleting.catch((e: unknown) => e);
    expect((err as { errorClass: string }).errorClass).toBe('Transient');
    expect((err as Error).message).toContain('Precondition failed: UID in precondition');
    expect(storedPod(f, 'default', req.name).metadata.uid).toBe(replacement);
  });

  it('reads an unreadable answer as malformed, never as gone or empty', async () => {
    const f = await fixture();
    const id = await f.provider.create(request());
    f.front.injectMalformed('<html><body>502 Bad Gateway</body></html>', 'text/html');
    const html = await f.provider.get(id).catch((e: unknown) => e);
    expect((html as { code: string }).code).toBe('PROVIDER_MALFORMED_ANSWER');
    expect((html as Error).message).toContain('with text/html, not JSON');
    f.front.injectMalformed('{"kind":"Pod","metadata":');
    expect(await f.provider.get(id).catch((e: unknown) => (e as { code: string }).code)).toBe(
      'PROVIDER_MALFORMED_ANSWER',
    );
    f.front.injectMalformed('{"kind":"PodList","items":null}');
    expect(await f.provider.listByTag().catch((e: unknown) => (e as { code: string }).code)).toBe(
      'PROVIDER_MALFORMED_ANSWER',
    );
    expect((await f.provider.get(id)).id).toBe(id);
  });
});

describe('RBAC: exactly the Role of rbac/role.yaml', () => {
  it('is enough with a RoleBinding in the one namespace the config names', async () => {
    const f = await fixture();
    await ensureNamespace(f.server, 'proxies');
    await grantProviderRole(f.server, { namespace: OPERATOR_NAMESPACE, name: 'scoped' }, 'proxies');
    await writeFile(f.tokenFile, `${f.server.serviceAccountToken(OPERATOR_NAMESPACE, 'scoped')}\n`);
    const p = await f.another({ namespace: 'proxies' });
    // Only the namespace: the cluster-wide listing of the default mode is refused.
    const wide = await f.provider.listByTag().catch((e: unknown) => e);
    expect((wide as { errorClass: string }).errorClass).toBe('Permanent');

    const req = request({
      namespace: 'team-a',
      auth: { realm: 'proxy-op team-a/web', passwordFile: new TextEncoder().encode('a:$6$b$c\n') },
    });
    const id = await p.create(req);
    expect(id).toBe(`proxies/${req.name}`);
    await p.updateAuth!(id, {
      realm: 'proxy-op team-a/web',
      passwordFile: new TextEncoder().encode('d:$6$e$f\n'),
    });
    await f.harness.setRunning(id, '10.4.5.6');
    expect(await p.get(id)).toMatchObject({ state: 'Running', ip: '10.4.5.6', uid: req.uid });
    expect((await p.listByTag()).map((i) => i.id)).toEqual([id]);
    const [check] = await p.check!();
    expect(check).toMatchObject({ reason: 'Reachable', ready: true });
    expect(check?.details).toMatchObject({
      namespace: 'proxies',
      listPods: 'proxies',
      createPods: 'proxies',
    });
    await p.delete(id);
    await f.kubelet.settle();
    expect(await p.get(id).catch(isNotFound)).toBe(true);
  });

  it('without the Role every operation is Permanent and the Checker says Forbidden', async () => {
    const f = await fixture();
    await writeFile(
      f.tokenFile,
      `${f.server.serviceAccountToken(OPERATOR_NAMESPACE, 'unbound')}\n`,
    );
    for (const call of [
      () => f.provider.create(request()),
      () => f.provider.get('default/proxy-x'),
      () => f.provider.delete('default/proxy-x'),
      () => f.provider.listByTag(),
      () =>
        f.provider.updateAuth!('default/proxy-x', {
          realm: 'r',
          passwordFile: new TextEncoder().encode('a:$6$b$c\n'),
        }),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect((err as { errorClass: string }).errorClass).toBe('Permanent');
      expect((err as Error).message).toContain('grant the rules of rbac/role.yaml');
    }
    const [check] = await f.provider.check!();
    expect(check?.reason).toBe('Forbidden');
    expect(check?.details.serverVersion).toBe('v1.32.0');
  });
});

describe('RBAC on Secrets: least privilege', () => {
  it('grants get, create and update on Secrets and nothing more: no list, watch or delete', async () => {
    const role = await providerRole();
    const rules = role.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    const secrets = rules.filter((r) => r.resources.includes('secrets'));
    expect(secrets).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update'] },
    ]);
  });

  it('each of the verbs is needed: without update, UpdateAuth is Permanent naming it', async () => {
    const f = await fixture();
    const role = await providerRole();
    const rules = (role.rules as { resources: string[]; verbs: string[] }[]).map((r) =>
      r.resources.includes('secrets') ? { ...r, verbs: r.verbs.filter((v) => v !== 'update') } : r,
    );
    await adminOk(f.server, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      body: { ...role, metadata: { name: 'without-secret-update' }, rules },
    });
    await adminOk(f.server, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      body: {
        metadata: { name: 'without-secret-update' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'without-secret-update',
        },
        subjects: [{ kind: 'ServiceAccount', namespace: OPERATOR_NAMESPACE, name: 'narrow' }],
      },
    });
    await writeFile(f.tokenFile, `${f.server.serviceAccountToken(OPERATOR_NAMESPACE, 'narrow')}\n`);
    const auth = {
      realm: 'proxy-op default/web',
      passwordFile: new TextEncoder().encode('a:$6$b$c\n'),
    };
    const id = await f.provider.create(request({ auth }));
    const err = await f.provider.updateAuth!(id, {
      ...auth,
      passwordFile: new TextEncoder().encode('d:$6$e$f\n'),
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Permanent' });
    expect(String(err)).toMatch(/cannot update resource "secrets"/);
  });
});

describe('OwnerReferences to the Proxy', () => {
  async function withProxyCrd(f: KubeFixture): Promise<void> {
    await adminOk(f.server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      body: {
        metadata: { name: 'proxies.proxy-op.io' },
        spec: {
          group: 'proxy-op.io',
          scope: 'Namespaced',
          names: { plural: 'proxies', singular: 'proxy', kind: 'Proxy', listKind: 'ProxyList' },
          versions: [
            {
              name: 'v1alpha1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          ],
        },
      },
    });
    for (let i = 0; i < 50; i++) {
      const r = await admin(
        f.server,
        'GET',
        '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies',
      );
      if (r.status === 200) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the Proxy CRD was not served');
  }

  it('names the Proxy, so the garbage collector removes the Pod with it', async () => {
    const f = await fixture({ config: { ownerReferences: true } });
    await withProxyCrd(f);
    const proxy = (
      await adminOk(f.server, 'POST', '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies', {
        body: {
          apiVersion: 'proxy-op.io/v1alpha1',
          kind: 'Proxy',
          metadata: { name: 'web' },
          spec: {},
        },
      })
    ).body;
    const req = request({ uid: proxy.metadata.uid });
    f.front.onPodCreated = undefined; // no scheduler while the provider's writes are counted
    f.server.counters.reset();
    const id = await f.provider.create(req);
    expect(f.server.counters.writes(), 'writes of a Create with an owner').toBe(1);
    expect(f.server.counters.count(), 'requests: read, Proxies, create').toBe(3);
    await f.kubelet.schedule('default', req.name);
    expect(storedPod(f, 'default', req.name).metadata.ownerReferences).toEqual([
      {
        apiVersion: 'proxy-op.io/v1alpha1',
        kind: 'Proxy',
        name: 'web',
        uid: proxy.metadata.uid,
        controller: true,
      },
    ]);
    // The Proxy goes without the operator (a finalizer bypassed): its Pod goes too.
    await adminOk(f.server, 'DELETE', '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies/web');
    await f.server.settled();
    expect((await f.provider.get(id)).state).toBe('Terminated');
    await f.kubelet.settle();
    expect(storedPod(f, 'default', req.name)).toBeUndefined();
  });

  it('is Permanent when the Proxy is not in the cluster', async () => {
    const f = await fixture({ config: { ownerReferences: true } });
    await withProxyCrd(f);
    const err = await f.provider.create(request()).catch((e: unknown) => e);
    expect((err as { errorClass: string }).errorClass).toBe('Permanent');
    expect((err as Error).message).toContain('no Proxy with UID');
    expect(f.kubelet.pods()).toEqual([]);
  });
});

describe('the Checker', () => {
  it('reports the server version and the access it proved', async () => {
    const f = await fixture();
    const [r] = await f.provider.check!();
    expect(r).toEqual({
      target: 'apiserver',
      address: `kubeconfig ${f.kubeconfig}`,
      ready: true,
      reason: 'Reachable',
      message: 'the API server answers; Pods can be listed and created',
      details: {
        namespace: '(each Proxy namespace)',
        server: f.front.url,
        serverVersion: 'v1.32.0',
        listPods: 'all namespaces',
        createPods: 'default',
      },
    });
    // The dry run stored nothing.
    expect(f.kubelet.pods()).toEqual([]);
  });
});

describe('credentials', () => {
  it('a kubeconfig with its own token works, and an echoed token is redacted', async () => {
    const f = await fixture();
    const token = f.grantedToken();
    const kubeconfig = join(f.dir, 'with-token');
    await writeFile(kubeconfig, kubeconfigText(f.front.url, f.front.cert, token));
    const logs = createLogSink();
    const p = await f.another({ kubeconfig, tokenFile: undefined }, { logger: logs.logger });
    const id = await p.create(request());
    expect((await p.get(id)).id).toBe(id);
    f.server.faults.fail(500, { message: `proxy in front dumped its request: Bearer ${token}` });
    const err = await p.get(id).catch((e: unknown) => e);
    expect(String((err as Error).message)).not.toContain(token);
    expect(String((err as Error).message)).toContain(REDACTED);
  });

  it('outside a cluster without a kubeconfig, says so (Permanent) without a request', async () => {
    const p = await createProvider(
      providerModule,
      'kube-b',
      {
        images: { squid: { image: 'squid:6' } },
        machineTypes: { small: { cpu: '100m', memory: '128Mi' } },
        allowedSources: ['10.0.0.0/8'],
      },
      {},
    );
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      const err = await p
        .create(request({ placement: { machineType: 'small', image: 'squid' } }))
        .catch((e: unknown) => e);
      expect((err as { errorClass: string }).errorClass).toBe('Permanent');
      expect((err as Error).message).toContain('not running in a cluster');
      const [r] = await p.check!();
      expect(r?.reason).toBe('CredentialsUnavailable');
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });

  it('a missing token file is Transient (a Secret not mounted yet)', async () => {
    const f = await fixture();
    const p = await f.another({ tokenFile: join(f.dir, 'not-yet') });
    const err = await p.listByTag().catch((e: unknown) => e);
    expect((err as { errorClass: string }).errorClass).toBe('Transient');
    expect((err as Error).message).toContain('does not exist (yet)');
  });
});

describe('observability', () => {
  it('one kubernetes.<call> span per request under the operation span, and debug lines', async () => {
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const f = await fixture({}, { logger: logs.logger, tracer: spans.tracer });
    const id = await f.provider.create(request());
    await f.provider.get(id);
    await f.provider.listByTag();
    await f.provider.delete(id);
    const all = spans.spans();
    const children = (op: string) => {
      const parent = all.find((s) => s.name === op);
      return all
        .filter((s) => s.parentSpanContext?.spanId === parent?.spanContext().spanId)
        .map((s) => s.name);
    };
    expect(children('provider.create')).toEqual(['kubernetes.readPod', 'kubernetes.createPod']);
    expect(children('provider.get')).toEqual(['kubernetes.readPod']);
    expect(children('provider.list')).toEqual(['kubernetes.listPods']);
    expect(children('provider.delete')).toEqual(['kubernetes.readPod', 'kubernetes.deletePod']);
    const created = all.find((s) => s.name === 'kubernetes.createPod');
    expect(created?.attributes).toEqual({ namespace: 'default', name: id.split('/')[1] });
    const msgs = logs.lines.filter((l) => l.level === 'debug').map((l) => l.msg);
    expect(msgs).toContain('kubernetes pod created');
    expect(msgs).toContain('kubernetes pod deleted');
    expect(msgs.filter((m) => m === 'kubernetes call')).toHaveLength(6);
    const miss = logs.lines.find((l) => l.msg === 'kubernetes call' && l.fields.httpStatus === 404);
    expect(miss?.fields).toMatchObject({
      call: 'readPod',
      reason: 'NotFound',
      namespace: 'default',
    });
    expect(logs.lines.filter((l) => l.level !== 'debug' && l.level !== 'trace')).toEqual([]);
  });
});

describe('the lifecycle (§11) on the test server', () => {
  it('Check, Create, Running, ListByTag, Delete, NotFound, nothing left', async () => {
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const f = await fixture({}, { logger: logs.logger, tracer: spans.tracer });
    const token = f.grantedToken();
    await writeFile(f.tokenFile, `${token}\n`);
    await lifecycle(f.provider, {
      request: request({ installation: 'blue' }),
      untilRunning: (id) => f.harness.setRunning(id, '10.44.0.7'),
      untilGone: () => f.kubelet.settle(),
      podsNamed: async (name) => f.kubelet.pods().filter((p) => p.metadata.name === name).length,
      logs,
      spans,
      secret: token,
    });
  });
});
