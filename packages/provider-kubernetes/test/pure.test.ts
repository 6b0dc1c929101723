// Peer: none. The pure pieces: config schema, Squid configuration, the Pod, states, IDs, marks.
import { ConfigError, createProvider, MarkKey, validateConfig } from '@proxy-op/contract';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS, configSchema } from '../src/config.js';
import { formatId, parseId } from '../src/id.js';
import { managedSelector, podMark } from '../src/labels.js';
import { providerModule } from '../src/module.js';
import {
  buildPod,
  type PodPlan,
  podLocation,
  SQUID_CONF_ANNOTATION,
  ZONE_LABEL,
} from '../src/pod.js';
import { podState } from '../src/state.js';

const minimal = {
  images: { squid: { image: 'docker.io/ubuntu/squid:6.10-24.10_beta' } },
  machineTypes: { small: { cpu: '100m', memory: '128Mi' } },
};

async function problems(input: unknown): Promise<readonly string[]> {
  try {
    await validateConfig(configSchema, input, 'kubernetes');
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('config', () => {
  it('fills the defaults of a minimal block', async () => {
    const c = await validateConfig(configSchema, minimal);
    expect(c).toEqual({
      checkNamespace: 'default',
      ownerReferences: false,
      allowedSources: [],
      connectPorts: [443],
      zones: [],
      imagePullSecrets: [],
      requestTimeoutSeconds: 30,
      credentialsTtlSeconds: 60,
      images: {
        squid: {
          image: 'docker.io/ubuntu/squid:6.10-24.10_beta',
          squidPath: '/usr/sbin/squid',
          runAsUser: 65534,
          runAsGroup: 65534,
        },
      },
      machineTypes: { small: { cpu: '100m', memory: '128Mi' } },
    });
    expect(CONFIG_DEFAULTS.connectPorts).toEqual([443]);
  });

  it('names every problem with its path', async () => {
    expect(
      await problems({
        kubeconfg: '/x',
        namespace: 'Proxies',
        context: 'prod',
        ownerReferences: 'yes',
        allowedSources: ['10.0.0.0/8', 'everyone', '10.0.0.0/8'],
        connectPorts: [443, 70000],
        zones: ['zone a'],
        requestTimeoutSeconds: 0,
        images: { squid: { image: '', runAsUser: 0, pullPolicy: 'Sometimes' } },
        machineTypes: { small: { cpu: 'lots', memory: '128Mi', gpu: 1 } },
      }),
    ).toEqual([
      'kubernetes.kubeconfg: unknown field; expected one of kubeconfig, context, tokenFile, namespace, checkNamespace, ownerReferences, allowedSources, connectPorts, images, machineTypes, zones, imagePullSecrets, requestTimeoutSeconds, credentialsTtlSeconds',
      'kubernetes.namespace: "Proxies" is not a namespace name (a lowercase DNS label)',
      'kubernetes.context: needs kubeconfig (in-cluster there is one context)',
      'kubernetes.ownerReferences: must be a boolean',
      'kubernetes.allowedSources[1]: "everyone" does not start with an IPv4 or IPv6 address',
      'kubernetes.allowedSources[2]: "10.0.0.0/8" is listed twice',
      'kubernetes.zones[0]: "zone a" is not a zone name (a label value)',
      'kubernetes.connectPorts[1]: 70000 is not a TCP port (1 to 65535)',
      'kubernetes.requestTimeoutSeconds: must be a number of seconds above 0 and at most 600',
      'kubernetes.images.squid.image: must be an image reference such as docker.io/ubuntu/squid:6.10',
      'kubernetes.images.squid.runAsUser: must be a non-root id (an integer above 0)',
      'kubernetes.images.squid.pullPolicy: must be one of Always, IfNotPresent, Never',
      'kubernetes.machineTypes.small.gpu: unknown field; expected one of cpu, memory, cpuLimit',
      'kubernetes.machineTypes.small.cpu: must be a Kubernetes quantity such as 100m',
    ]);
  });

  it('needs both catalogues', async () => {
    expect(await problems({})).toEqual([
      'kubernetes.images: must map at least one image key to { image }',
      'kubernetes.machineTypes: must map at least one machine type key to { cpu, memory }',
    ]);
    expect(await problems(null)).toEqual([
      'kubernetes: must be an object with at least images and machineTypes',
    ]);
  });

  it('refuses OwnerReferences with a fixed namespace', async () => {
    expect(await problems({ ...minimal, namespace: 'proxies', ownerReferences: true })).toEqual([
      'kubernetes.ownerReferences: needs each Pod in its Proxy namespace: unset namespace (an owner must be in the same namespace)',
    ]);
  });

  it('builds a provider without reading a file or making a request', async () => {
    const p = await createProvider(
      providerModule,
      'kube-x',
      { ...minimal, kubeconfig: '/nowhere/kubeconfig', tokenFile: '/nowhere/token' },
      {},
    );
    expect(p.type).toBe('kubernetes');
    expect(typeof p.check).toBe('function');
    await p.close?.();
  });
});

const plan: PodPlan = {
  namespace: 'team-a',
  name: 'proxy-team-a-web-1234abcd',
  uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
  installation: 'default',
  port: 3128,
  allowedSources: ['10.0.0.0/8', 'fd00::/8'],
  connectPorts: [443],
  image: {
    image: 'docker.io/ubuntu/squid:6.10-24.10_beta',
    squidPath: '/usr/sbin/squid',
    runAsUser: 13,
    runAsGroup: 13,
  },
  machineType: { cpu: '100m', memory: '128Mi' },
  imagePullSecrets: [],
};

describe('the Pod', () => {
  const pod = buildPod({ ...plan, zone: 'europe-west1-b', imagePullSecrets: ['regcred'] });

  it('carries the mark in labels and its Squid configuration in an annotation', () => {
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'proxy-op-squid',
      'app.kubernetes.io/managed-by': 'proxy-op',
      [MarkKey.Managed]: 'true',
      [MarkKey.Uid]: plan.uid,
      [MarkKey.Installation]: 'default',
    });
    expect(pod.metadata?.annotations?.[SQUID_CONF_ANNOTATION]).toBe(
      renderSquidConfig({
        port: plan.port,
        allowedSources: plan.allowedSources,
        connectPorts: plan.connectPorts,
      }),
    );
    expect(pod.metadata?.ownerReferences).toBeUndefined();
    expect(buildPod(plan)).toEqual(buildPod(plan));
  });

  it('is hardened: non-root, read-only root, no capabilities, RuntimeDefault seccomp, no token', () => {
    const spec = pod.spec!;
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 13,
      runAsGroup: 13,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const c = spec.containers[0]!;
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.command).toEqual(['/usr/sbin/squid', '-N', '-f', '/etc/squid-proxy-op/squid.conf']);
    expect(c.ports).toEqual([{ name: 'proxy', containerPort: 3128, protocol: 'TCP' }]);
    expect(c.readinessProbe?.tcpSocket?.port).toBe(3128);
    expect(c.livenessProbe?.tcpSocket?.port).toBe(3128);
    expect(c.volumeMounts?.map((m) => [m.mountPath, m.readOnly ?? false])).toEqual([
      ['/etc/squid-proxy-op', true],
      ['/run/squid', false],
      ['/var/spool/squid', false],
      ['/tmp', false],
    ]);
    expect(spec.volumes?.[0]?.downwardAPI?.items).toEqual([
      {
        path: 'squid.conf',
        fieldRef: { fieldPath: `metadata.annotations['${SQUID_CONF_ANNOTATION}']` },
      },
    ]);
    expect(spec.volumes?.slice(1).map((v) => v.emptyDir)).toEqual([
      { medium: 'Memory', sizeLimit: '16Mi' },
      { medium: 'Memory', sizeLimit: '16Mi' },
      { medium: 'Memory', sizeLimit: '16Mi' },
    ]);
    expect(spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
  });

  it('uses the placement: zone affinity, the machine type resources, the image', () => {
    expect(
      pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    ).toEqual({
      nodeSelectorTerms: [
        { matchExpressions: [{ key: ZONE_LABEL, operator: 'In', values: ['europe-west1-b'] }] },
      ],
    });
    expect(pod.spec?.containers[0]?.resources).toEqual({
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '128Mi' },
    });
    expect(pod.spec?.containers[0]?.image).toBe('docker.io/ubuntu/squid:6.10-24.10_beta');
    const big = buildPod({ ...plan, machineType: { cpu: '1', memory: '1Gi', cpuLimit: '2' } });
    expect(big.spec?.containers[0]?.resources?.limits).toEqual({ memory: '1Gi', cpu: '2' });
    expect(buildPod(plan).spec?.affinity).toBeUndefined();
  });

  it('tells where it runs from its own zone affinity, and nothing where it may run in any zone', () => {
    expect(podLocation(pod)).toEqual({ zone: 'europe-west1-b' });
    expect(podLocation(buildPod(plan))).toBeUndefined();
    const pinned = (...terms: unknown[]) =>
      podLocation({
        spec: {
          containers: [],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms as [] },
            },
          },
        },
      });
    const zone = (z: unknown, operator = 'In') => ({ key: ZONE_LABEL, operator, values: [z] });
    const arch = { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] };
    // Every term pins the same zone, beside other requirements: that zone.
    expect(
      pinned({ matchExpressions: [arch, zone('a')] }, { matchExpressions: [zone('a')] }),
    ).toEqual({ zone: 'a' });
    // Terms are alternatives: two zones, or a term without one, leave the place open.
    expect(
      pinned({ matchExpressions: [zone('a')] }, { matchExpressions: [zone('b')] }),
    ).toBeUndefined();
    expect(pinned({ matchExpressions: [zone('a')] }, { matchExpressions: [arch] })).toBeUndefined();
    expect(pinned({ matchExpressions: [zone('a', 'NotIn')] })).toBeUndefined();
    expect(
      pinned({ matchExpressions: [{ key: ZONE_LABEL, operator: 'In', values: ['a', 'b'] }] }),
    ).toBeUndefined();
    // What no zone name can be, or no term at all, reports nothing rather than a bad location.
    expect(pinned({ matchExpressions: [zone('')] })).toBeUndefined();
    expect(pinned({ matchExpressions: [zone(7)] })).toBeUndefined();
    expect(pinned({ matchExpressions: 'nonsense' }, null)).toBeUndefined();
    expect(pinned()).toBeUndefined();
  });

  it('names its Proxy as owner when asked', () => {
    const owned = buildPod({
      ...plan,
      owner: { apiVersion: 'proxy-op.io/v1alpha1', kind: 'Proxy', name: 'web', uid: plan.uid },
    });
    expect(owned.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'proxy-op.io/v1alpha1',
        kind: 'Proxy',
        name: 'web',
        uid: plan.uid,
        controller: true,
      },
    ]);
  });
});

describe('states', () => {
  const cases: [string, Parameters<typeof podState>[0], string][] = [
    ['Pending', { phase: 'Pending' }, 'Provisioning'],
    ['no phase yet', {}, 'Provisioning'],
    [
      'Running, Ready, with an IP',
      { phase: 'Running', podIP: '10.1.2.3', ready: 'True' },
      'Running',
    ],
    ['Running, not Ready', { phase: 'Running', podIP: '10.1.2.3', ready: 'False' }, 'Provisioning'],
    ['Running, Ready, no IP', { phase: 'Running', ready: 'True' }, 'Provisioning'],
    [
      'Running, Ready, IPv6 only',
      { phase: 'Running', podIP: 'fd00::5', ready: 'True' },
      'Provisioning',
    ],
    ['Succeeded', { phase: 'Succeeded' }, 'Terminated'],
    ['Failed', { phase: 'Failed' }, 'Terminated'],
    ['Unknown', { phase: 'Unknown' }, 'Stopped'],
    ['a phase nobody knows', { phase: 'Suspended' }, 'Stopped'],
    [
      'being deleted while Running',
      { phase: 'Running', podIP: '10.1.2.3', ready: 'True', deletionTimestamp: new Date() },
      'Terminated',
    ],
    [
      'being deleted while Pending',
      { phase: 'Pending', deletionTimestamp: new Date() },
      'Terminated',
    ],
  ];
  for (const [what, facts, want] of cases) {
    it(`${what} is ${want}`, () => expect(podState(facts)).toBe(want));
  }
});

describe('IDs and marks', () => {
  it('formats and parses namespace/name strictly', () => {
    expect(formatId({ namespace: 'default', name: 'proxy-a' })).toBe('default/proxy-a');
    expect(parseId('default/proxy-a')).toEqual({ namespace: 'default', name: 'proxy-a' });
    for (const bad of ['proxy-a', 'default/', '/proxy-a', 'a/b/c', 'Default/proxy-a', 'ns/a.b']) {
      expect(parseId(bad), bad).toBeUndefined();
    }
  });

  it('reads the mark from labels, the creation time from the Pod', () => {
    const at = new Date('2026-01-02T03:04:05Z');
    expect(podMark({ [MarkKey.Managed]: 'true', [MarkKey.Uid]: 'u-1' }, at)).toEqual({
      uid: 'u-1',
      createdAt: at,
      installation: 'default',
    });
    expect(podMark({ [MarkKey.Uid]: 'u-1' }, at)).toBeUndefined();
    expect(podMark({ [MarkKey.Managed]: 'true' }, undefined)?.createdAt.getTime()).toBe(0);
    expect(managedSelector('default')).toBe('proxy-operator-managed=true');
    expect(managedSelector('blue')).toBe(
      'proxy-operator-managed=true,proxy-operator-installation=blue',
    );
  });
});
