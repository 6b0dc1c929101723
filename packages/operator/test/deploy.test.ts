// Peers: the real kubectl's built-in kustomize (every combination of the components, a fresh
// HOME), the built CLI (`proxy-op crds`), and the Kubernetes API test server enforcing the CRDs'
// structural schemas, side by side with the operator's own validation of the same manifests.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { crdsYaml } from '../src/api/crds.js';
import { validateProxyManifest } from '../src/api/proxy.js';
import { runCli } from './cli-support.js';
import { call, installCrds, KubeTestServer } from './kube-support.js';

const PKG = fileURLToPath(new URL('..', import.meta.url));
const DEPLOY = join(PKG, 'deploy');
const COMPONENTS = ['kubernetes-provider', 'proxmox-token', 'kvm-ssh', 'gcp-credentials'] as const;
const MOUNTS: Record<string, string> = {
  'proxmox-token': '/etc/proxy-operator/proxmox',
  'kvm-ssh': '/etc/proxy-operator/kvm',
  'gcp-credentials': '/etc/proxy-operator/gcp',
};

describe('the CRDs', () => {
  it('`proxy-op crds` prints exactly what deploy/base/crds.yaml ships', async () => {
    const shipped = await readFile(join(DEPLOY, 'base', 'crds.yaml'), 'utf8');
    expect(crdsYaml()).toBe(shipped);
    const r = await runCli(['crds']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(shipped);
  });

  describe('on the API server, they accept and refuse what the operator does', () => {
    let server: KubeTestServer;
    beforeAll(async () => {
      server = await KubeTestServer.start();
      await installCrds(server);
    });
    afterAll(async () => {
      await server.stop();
    });

    const spec = { provider: 'lab', allowedSources: ['10.0.0.0/8'] };
    const cases: Array<[string, Record<string, unknown>, boolean]> = [
      ['minimal', spec, true],
      ['IPv6 source', { ...spec, allowedSources: ['fd00::/8'] }, true],
      [
        'full',
        {
          ...spec,
          port: 8080,
          placement: { zone: 'a', machineType: 'm', image: 'i' },
          cloudInit: '#cloud-config\n',
        },
        true,
      ],
      ['no provider', { allowedSources: ['10.0.0.0/8'] }, false],
      ['no sources', { provider: 'lab', allowedSources: [] }, false],
      ['not a CIDR', { ...spec, allowedSources: ['10.0.0.0'] }, false],
      ['port 0', { ...spec, port: 0 }, false],
      ['port 65536', { ...spec, port: 65536 }, false],
      ['provider not a label', { ...spec, provider: 'Lab_1' }, false],
      ['empty image', { ...spec, placement: { image: '' } }, false],
    ];
    it.each(cases)('%s', async (name, s, valid) => {
      const manifest = {
        apiVersion: 'proxy-op.io/v1alpha1',
        kind: 'Proxy',
        metadata: { name: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'), namespace: 'default' },
        spec: s,
      };
      expect(validateProxyManifest(manifest).ok).toBe(valid);
      const r = await call(
        server,
        'POST',
        '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies',
        {
          body: manifest,
        },
      );
      expect(r.status).toBe(valid ? 201 : 422);
      if (valid) {
        // The server's defaults are the operator's.
        const v = validateProxyManifest(manifest);
        expect(v.ok && r.body.spec).toEqual(v.ok ? v.value.spec : undefined);
      }
    });
  });
});

describe('the kubernetes-provider component', () => {
  it('ships rbac/role.yaml of @proxy-op/provider-kubernetes unchanged', async () => {
    const ours = await readFile(
      join(DEPLOY, 'components', 'kubernetes-provider', 'role.yaml'),
      'utf8',
    );
    const theirs = await readFile(
      fileURLToPath(new URL('../../provider-kubernetes/rbac/role.yaml', import.meta.url)),
      'utf8',
    );
    expect(ours).toBe(theirs);
  });
});

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are read freely
  spec?: any;
  rules?: Array<{ resources: string[] }>;
}

describeWithPeers({ describe, it }, 'kubectl kustomize', ['kubectl'], () => {
  let root = '';
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'proxy-op-kustomize-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const build = async (dir: string): Promise<K8sObject[]> => {
    const home = await mkdtemp(join(root, 'home-'));
    const r = await runProcess('kubectl', ['kustomize', dir], { env: { HOME: home } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
  };

  it('builds the base with a non-root, read-only operator, probes and resources', async () => {
    const objects = await build(join(DEPLOY, 'base'));
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ClusterRole/proxy-op',
      'ClusterRoleBinding/proxy-op',
      'ConfigMap/proxy-op-providers',
      'CustomResourceDefinition/providerhealths.proxy-op.io',
      'CustomResourceDefinition/proxies.proxy-op.io',
      'CustomResourceDefinition/proxypools.proxy-op.io',
      'Deployment/proxy-op',
      'Namespace/proxy-op-system',
      'Role/proxy-op-leader-election',
      'RoleBinding/proxy-op-leader-election',
      'Service/proxy-op-metrics',
      'Service/proxy-op-probe',
      'ServiceAccount/proxy-op',
    ]);
    const d = objects.find((o) => o.kind === 'Deployment');
    const pod = d?.spec.template.spec;
    expect(pod.serviceAccountName).toBe('proxy-op');
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const c = pod.containers[0];
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(c.resources.requests).toBeDefined();
    expect(c.resources.limits.memory).toBeDefined();
    expect(c.args).toContain('--listen=:9464');
    // The pools' gateway Pods run the operator's own image.
    expect(c.args).toContain(`--gateway-image=${c.image}`);
    // Nothing in the base grants Pods.
    for (const o of objects) {
      for (const r of o.rules ?? []) expect(r.resources).not.toContain('pods');
    }
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'proxy-op-metrics');
    expect(svc?.spec.selector).toEqual(d?.spec.selector.matchLabels);
    expect(svc?.spec.ports[0]).toMatchObject({
      name: 'metrics',
      port: 9464,
      targetPort: 'metrics',
    });
    // The probe target: a port of the operator Pod behind a Service, at the URLs the operator
    // gives its probes (CONNECT to 443, which the proxies' Squid allows).
    const probe = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'proxy-op-probe');
    expect(probe?.spec.selector).toEqual(d?.spec.selector.matchLabels);
    expect(probe?.spec.ports).toEqual([
      { name: 'http', port: 80, targetPort: 'probe-http', protocol: 'TCP' },
      { name: 'https', port: 443, targetPort: 'probe-https', protocol: 'TCP' },
    ]);
    expect(
      c.ports.map((p: { name: string; containerPort: number }) => `${p.name}:${p.containerPort}`),
    ).toEqual(['metrics:9464', 'probe-http:8080', 'probe-https:8443']);
    expect(c.args).toEqual(
      expect.arrayContaining([
        '--probe-listen=:8080',
        '--probe-tls-listen=:8443',
        '--probe-url=http://proxy-op-probe.proxy-op-system.svc.cluster.local/',
        '--probe-tls-url=https://proxy-op-probe.proxy-op-system.svc.cluster.local/',
      ]),
    );
  });

  it('builds every combination of the components', async () => {
    for (let mask = 0; mask < 1 << COMPONENTS.length; mask++) {
      const chosen = COMPONENTS.filter((_, i) => (mask & (1 << i)) !== 0);
      const dir = await mkdtemp(join(root, 'overlay-'));
      const rel = relative(dir, DEPLOY);
      await writeFile(
        join(dir, 'kustomization.yaml'),
        `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ${rel}/base
${chosen.length > 0 ? `components:\n${chosen.map((c) => `  - ${rel}/components/${c}\n`).join('')}` : ''}`,
      );
      const objects = await build(dir);
      const label = chosen.join('+') || '(none)';
      const podRules = objects
        .flatMap((o) => o.rules ?? [])
        .filter((r) => r.resources.includes('pods'));
      expect(podRules.length > 0, label).toBe(chosen.includes('kubernetes-provider'));
      const pod = objects.find((o) => o.kind === 'Deployment')?.spec.template.spec;
      const mounts = new Map<string, string>(
        pod.containers[0].volumeMounts.map((m: { name: string; mountPath: string }) => [
          m.name,
          m.mountPath,
        ]),
      );
      for (const [secret, path] of Object.entries(MOUNTS)) {
        const on = chosen.includes(secret as (typeof COMPONENTS)[number]);
        expect(mounts.get(secret), `${label}: ${secret}`).toBe(on ? path : undefined);
        const volume = pod.volumes.find((v: { name: string }) => v.name === secret);
        expect(volume?.secret, `${label}: ${secret}`).toEqual(
          on ? { secretName: secret, optional: true, defaultMode: 0o440 } : undefined,
        );
      }
      // The providers file and /tmp stay mounted whatever is added.
      expect(mounts.get('providers')).toBe('/etc/proxy-op');
      expect(mounts.get('tmp')).toBe('/tmp');
    }
  }, 120_000);
});
