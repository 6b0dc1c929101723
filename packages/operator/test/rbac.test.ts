// Peer: the Kubernetes API test server enforcing RBAC for service-account tokens, with exactly
// the rules of deploy/base/rbac.yaml; the operator's parts run in process with the ServiceAccount's
// token. Every rule is removed in turn: the operation it names must then fail with a clear
// error, and succeed with the rule in place (least privilege proven, not assumed).

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@proxy-op/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../src/kube/client.js';
import { SecretCredentialStore } from '../src/kube/credentials.js';
import { KubeGateways } from '../src/kube/gateways.js';
import { LeaderElector } from '../src/kube/leader.js';
import { KubePoolStore } from '../src/kube/pools.js';
import { KubeStore } from '../src/kube/store.js';
import { Operator } from '../src/manager/operator.js';
import { createLogger } from '../src/process/log.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import {
  call,
  clientFor,
  createProxy,
  installCrds,
  KubeTestServer,
  stored,
  tempDir,
  until,
} from './kube-support.js';
import { providerSet, testRegistry } from './support.js';

const RBAC = fileURLToPath(new URL('../deploy/base/rbac.yaml', import.meta.url));
const COMPONENT = fileURLToPath(
  new URL('../deploy/components/kubernetes-provider/', import.meta.url),
);
const NS = 'proxy-op-system';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface Role {
  apiVersion: string;
  kind: 'ClusterRole' | 'Role';
  metadata: { name: string; namespace?: string };
  rules: Rule[];
}

let server: KubeTestServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let sa: KubeClient;
let saKubeconfig = '';
let roles: Role[] = [];
let bindings: Array<Record<string, unknown>> = [];
let componentBinding: Record<string, unknown> | undefined;

/**
 * Binds the kubernetes-provider component's ClusterRole, or unbinds it: it also grants `list`
 * on proxies, so the base rules are tested without it, as a cluster without a kubernetes
 * provider runs.
 */
async function component(bound: boolean): Promise<void> {
  const path = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
  if (bound) {
    const r = await call(server, 'POST', path, { body: componentBinding });
    expect([201, 409]).toContain(r.status);
  } else {
    const r = await call(server, 'DELETE', `${path}/proxy-op-provider-kubernetes`);
    expect([200, 404]).toContain(r.status);
  }
}

/** Log lines of one scenario. */
function memoryLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'debug',
    destination: {
      write(s: string) {
        lines.push(JSON.parse(s) as Record<string, unknown>);
      },
    },
  });
  return { logger, lines };
}

function rolePath(r: Role): string {
  return r.kind === 'ClusterRole'
    ? `/apis/rbac.authorization.k8s.io/v1/clusterroles/${r.metadata.name}`
    : `/apis/rbac.authorization.k8s.io/v1/namespaces/${r.metadata.namespace}/roles/${r.metadata.name}`;
}

/** Replaces a role (as an admin) with these rules. */
async function putRole(r: Role, rules: Rule[]): Promise<void> {
  const cur = await call(server, 'GET', rolePath(r));
  const res = await call(server, 'PUT', rolePath(r), {
    body: {
      ...r,
      metadata: { ...r.metadata, resourceVersion: cur.body.metadata.resourceVersion },
      rules,
    },
  });
  expect(res.status).toBe(200);
}

/** The first log line (or the outcome) a scenario reports: '' when the operation worked. */
type Scenario = (n: number) => Promise<string>;

/** Waits for `done` or for a log line with this message; returns the line's `err`, or ''. */
async function outcome(
  lines: Array<Record<string, unknown>>,
  msg: string,
  done: () => boolean | Promise<boolean>,
  ms = 8000,
): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const hit = lines.find((l) => l.msg === msg);
    if (hit !== undefined) return String(hit.err);
    if (await done()) return '';
    if (Date.now() > end) throw new Error(`neither done nor "${msg}" logged`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function namespace(n: number): Promise<string> {
  const name = `rbac-${n}`;
  const r = await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name } } });
  expect(r.status).toBe(201);
  return name;
}

/** The store and operator over the memory provider `lab<n>`, with the ServiceAccount's token. */
async function operatorFor(n: number, logger: Logger, namespaceName?: string) {
  const { registry } = testRegistry();
  const set = await providerSet(
    `installation: rbac\nproviders:\n  - name: lab${n}\n    type: memory\n`,
    registry,
  );
  const store = await KubeStore.start({
    client: sa,
    namespace: namespaceName,
    logger,
    signal: AbortSignal.timeout(8000),
  });
  const operator = new Operator({
    store,
    providers: set,
    logger,
    credentials: new SecretCredentialStore(sa),
    settings: { gcIntervalMs: 0, healthIntervalMs: 0, backoffBaseMs: 50, backoffMaxMs: 200 },
  });
  return {
    store,
    operator,
    registry,
    async stop() {
      await operator.stop();
      await store.close();
      await set.close();
    },
  };
}

/** A Proxy through to Ready, or the first reconcile failure whose error names `what`. */
function reconcileScenario(what: string, before?: () => void): Scenario {
  return async (n) => {
    const { logger, lines } = memoryLogger();
    const ns = await namespace(n);
    const op = await operatorFor(n, logger, ns);
    op.operator.start();
    try {
      before?.();
      await createProxy(server, 'p', { provider: `lab${n}` }, ns);
      const failed = () =>
        lines.find((l) => l.msg === 'reconcile failed' && String(l.err).startsWith(what));
      await until(
        () => failed() !== undefined || stored(server, 'p', ns)?.status?.phase === 'Ready',
        8000,
        `${what} or Ready`,
      );
      return failed() === undefined ? '' : String(failed()?.err);
    } finally {
      await op.stop();
    }
  };
}

/**
 * A Proxy's credential Secret until `done` (after `then`, once the Proxy is
 * created), or the first reconcile failure whose error names a Secret.
 */
function secretScenario(
  done: (ns: string) => Promise<boolean>,
  then?: (ns: string) => Promise<void>,
): Scenario {
  return async (n) => {
    const { logger, lines } = memoryLogger();
    const ns = await namespace(n);
    const op = await operatorFor(n, logger, ns);
    op.operator.start();
    try {
      await createProxy(server, 'p', { provider: `lab${n}` }, ns);
      await then?.(ns);
      const failed = () =>
        lines.find((l) => l.msg === 'reconcile failed' && String(l.err).includes('Secret'));
      await until(async () => failed() !== undefined || (await done(ns)), 8000, 'done or failed');
      return failed() === undefined ? '' : String(failed()?.err);
    } finally {
      await op.stop();
    }
  };
}

/** One health round (the provider's first), or its error. */
function healthScenario(
  setup?: (op: Awaited<ReturnType<typeof operatorFor>>) => Promise<void>,
): Scenario {
  return async (n) => {
    const { logger } = memoryLogger();
    const op = await operatorFor(n, logger);
    try {
      await setup?.(op);
      await op.operator.runHealth();
      return '';
    } catch (err) {
      return (err as Error).message;
    } finally {
      await op.stop();
    }
  };
}

async function deleteLease(): Promise<void> {
  await call(server, 'DELETE', `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/proxy-op`);
}

async function createLease(holder: string): Promise<void> {
  const t = '2020-01-01T00:00:00.000000Z';
  const r = await call(server, 'POST', `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, {
    body: {
      metadata: { name: 'proxy-op' },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: 1,
        acquireTime: t,
        renewTime: t,
        leaseTransitions: 0,
      },
    },
  });
  expect(r.status).toBe(201);
}

/** Leader election until this replica leads, or its first failure. */
function leaseScenario(existing: boolean): Scenario {
  return async () => {
    await deleteLease();
    if (existing) await createLease('gone-replica');
    const { logger, lines } = memoryLogger();
    const e = new LeaderElector({
      client: sa,
      namespace: NS,
      identity: 'me',
      leaseDurationMs: 1000,
      renewDeadlineMs: 600,
      retryPeriodMs: 200,
      logger,
    });
    const stop = new AbortController();
    let leading = false;
    const run = e.acquire(stop.signal).then(
      () => {
        leading = true;
      },
      () => {},
    );
    try {
      return await outcome(lines, 'leader election: cannot take the Lease', () => leading, 8000);
    } finally {
      stop.abort();
      await run;
      await e.release();
    }
  };
}

/** A Proxy on a kubernetes provider (Pods on the test server) until its Pod exists, or the latch. */
function podScenario(ownerReferences: boolean, secret = false): Scenario {
  return async (n) => {
    const { logger, lines } = memoryLogger();
    const ns = await namespace(n);
    const { registry } = testRegistry();
    const set = await providerSet(
      `installation: rbac
providers:
  - name: kube${n}
    type: kubernetes
    kubernetes:
      kubeconfig: ${saKubeconfig}
      ownerReferences: ${ownerReferences}
      images:
        squid: { image: registry.example/squid:6 }
      machineTypes:
        small: { cpu: 100m, memory: 64Mi }
`,
      registry,
    );
    const store = await KubeStore.start({ client: sa, namespace: ns, logger });
    const operator = new Operator({
      store,
      providers: set,
      logger,
      settings: { gcIntervalMs: 0, healthIntervalMs: 0, backoffBaseMs: 50, backoffMaxMs: 200 },
    });
    operator.start();
    try {
      await createProxy(
        server,
        'p',
        { provider: `kube${n}`, placement: { machineType: 'small', image: 'squid' } },
        ns,
      );
      // With `secret`, the Pod is not enough: its password file's Secret must be made too.
      return await outcome(
        lines,
        'permanent provider error; latched until the spec changes',
        () =>
          server.objects('', secret ? 'secrets' : 'pods', ns).length > 0 &&
          server.objects('', 'pods', ns).length > 0,
      );
    } finally {
      await operator.stop();
      await store.close();
      await set.close();
    }
  };
}

/** Starts the store as the ServiceAccount: the scenario of the rights it needs to start. */
function startScenario(failure: string): Scenario {
  return async () => {
    const { logger, lines } = memoryLogger();
    let store: KubeStore | undefined;
    const started = KubeStore.start({
      client: sa,
      logger,
      signal: AbortSignal.timeout(8000),
    }).then(
      (s) => {
        store = s;
      },
      () => {},
    );
    try {
      return await outcome(lines, failure, () => store !== undefined);
    } finally {
      await started;
      await store?.close();
    }
  };
}

/**
 * A ProxyPool of one through to an available Proxy whose endpoint is in the
 * pool's ConfigMap (then `then`, and `done`), or the first pool reconcile
 * failure (or pool informer failure) whose error names `what`.
 */
function poolScenario(
  what: string,
  opts: {
    before?: () => void;
    after?: (ns: string) => Promise<void>;
    done?: (ns: string) => boolean;
    /** The pool's spec.gateway. */
    gateway?: Record<string, unknown>;
  } = {},
): Scenario {
  return async (n) => {
    const { logger, lines } = memoryLogger();
    const ns = await namespace(n);
    const { registry } = testRegistry();
    const set = await providerSet(
      `installation: rbac\nproviders:\n  - name: lab${n}\n    type: memory\n`,
      registry,
    );
    const store = await KubeStore.start({
      client: sa,
      namespace: ns,
      logger,
      signal: AbortSignal.timeout(8000),
    });
    const credentials = new SecretCredentialStore(sa);
    let pools: KubePoolStore | undefined;
    const started = KubePoolStore.start({
      client: sa,
      proxies: store,
      namespace: ns,
      logger,
      signal: AbortSignal.timeout(8000),
    }).then(
      (p) => {
        pools = p;
      },
      () => {},
    );
    const failed = () =>
      lines.find(
        (l) =>
          (l.msg === 'pool reconcile failed' || l.msg === 'the ProxyPool informer failed') &&
          String(l.err).includes(what),
      );
    let operator: Operator | undefined;
    try {
      await until(
        () => pools !== undefined || failed() !== undefined,
        8000,
        'pool store or failure',
      );
      if (pools === undefined) return String(failed()?.err);
      operator = new Operator({
        store,
        pools,
        providers: set,
        logger,
        credentials,
        gateways: new KubeGateways({ client: sa, image: 'proxy-op:rbac', gatewayRecheckMs: 100 }),
        settings: {
          gcIntervalMs: 0,
          healthIntervalMs: 0,
          probeIntervalMs: 0,
          backoffBaseMs: 50,
          backoffMaxMs: 200,
        },
      });
      operator.start();
      opts.before?.();
      const r = await call(
        server,
        'POST',
        `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxypools`,
        {
          body: {
            apiVersion: 'proxy-op.io/v1alpha1',
            kind: 'ProxyPool',
            metadata: { name: 'pool' },
            spec: {
              replicas: 1,
              template: {
                spec: {
                  provider: `lab${n}`,
                  allowedSources: ['10.0.0.0/8'],
                  placement: { machineType: 'small', image: 'debian-13' },
                },
              },
              ...(opts.gateway === undefined ? {} : { gateway: opts.gateway }),
            },
          },
        },
      );
      expect(r.status).toBe(201);
      const published = () =>
        ((server.objects('', 'configmaps', ns)[0] as { data?: { endpoints?: string } } | undefined)
          ?.data?.endpoints ?? '') !== '';
      await until(() => failed() !== undefined || published(), 8000, `${what} or published`);
      if (failed() === undefined && opts.after !== undefined) {
        await opts.after(ns);
        await until(
          () => failed() !== undefined || (opts.done?.(ns) ?? true),
          8000,
          `${what} or done`,
        );
      }
      return failed() === undefined ? '' : String(failed()?.err);
    } finally {
      await operator?.stop();
      await started;
      await pools?.close();
      await store.close();
      await set.close();
    }
  };
}

/** A pool with a gateway: written (get, create), then changed (update) or disabled (delete). */
function gatewayScenario(what: string, then?: 'change' | 'disable'): Scenario {
  const patch = async (ns: string, gateway: Record<string, unknown>) => {
    const r = await call(
      server,
      'PATCH',
      `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxypools/pool`,
      { body: { spec: { gateway } }, contentType: 'application/merge-patch+json' },
    );
    expect(r.status).toBe(200);
  };
  const service = (ns: string) =>
    server.objects('', 'services', ns)[0] as { spec?: { ports?: Array<{ port: number }> } };
  return poolScenario(what, {
    gateway: { enabled: true, port: 8080 },
    ...(then === undefined
      ? {}
      : then === 'change'
        ? {
            after: (ns) => patch(ns, { port: 9090 }),
            done: (ns) => service(ns)?.spec?.ports?.[0]?.port === 9090,
          }
        : {
            after: (ns) => patch(ns, { enabled: false }),
            done: (ns) =>
              server.objects('apps', 'deployments', ns).length === 0 &&
              server.objects('', 'services', ns).length === 0,
          }),
  });
}

/** Scales the scenario's pool to none; done once its Proxies are gone. */
const scaleToNone = {
  after: async (ns: string) => {
    const r = await call(
      server,
      'PATCH',
      `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxypools/pool`,
      {
        body: { spec: { replicas: 0 } },
        contentType: 'application/merge-patch+json',
      },
    );
    expect(r.status).toBe(200);
  },
  done: (ns: string) => server.objects('proxy-op.io', 'proxies', ns).length === 0,
};

/** The scenario of each rule, by `resources verbs`: what the rule grants, and the operation. */
const SCENARIOS: Record<string, { operation: string; run: Scenario }> = {
  'proxies list,watch': {
    operation: 'listing Proxies',
    run: startScenario('the Proxy informer failed'),
  },
  'proxies get': {
    operation: 're-reading Proxy',
    run: reconcileScenario('re-reading Proxy', () =>
      server.faults.conflictNextWrites(1, {
        resource: 'proxies',
        subresource: 'status',
        verb: 'update',
      }),
    ),
  },
  'proxies patch': {
    operation: 'adding the finalizer to Proxy',
    run: reconcileScenario('adding the finalizer to Proxy'),
  },
  'proxies/status update': {
    operation: 'writing the status of Proxy',
    run: reconcileScenario('writing the status of Proxy'),
  },
  'secrets get': {
    operation: 'reading Secret',
    run: reconcileScenario('reading Secret'),
  },
  'secrets create': {
    operation: 'writing Secret',
    run: reconcileScenario('writing Secret'),
  },
  'secrets update': {
    operation: 'writing Secret',
    run: secretScenario(async (ns) => {
      const s = server.objects('', 'secrets', ns)[0] as { data?: Record<string, string> };
      return s?.data?.url !== undefined;
    }),
  },
  'secrets delete': {
    operation: 'deleting Secret',
    run: secretScenario(
      async (ns) =>
        server.objects('', 'secrets', ns).length === 0 && stored(server, 'p', ns) === undefined,
      async (ns) => {
        await until(() => stored(server, 'p', ns)?.status?.phase === 'Ready', 8000, 'Ready');
        await call(server, 'DELETE', `/apis/proxy-op.io/v1alpha1/namespaces/${ns}/proxies/p`);
      },
    ),
  },
  'proxies create': { operation: 'creating Proxy', run: poolScenario('creating Proxy') },
  'proxies delete': {
    operation: 'deleting Proxy',
    run: poolScenario('deleting Proxy', scaleToNone),
  },
  'proxypools list,watch': {
    operation: 'listing ProxyPools',
    run: poolScenario('listing ProxyPools'),
  },
  'proxypools get': {
    operation: 'reading ProxyPool',
    run: poolScenario('reading ProxyPool', {
      before: () =>
        server.faults.conflictNextWrites(1, {
          resource: 'proxypools',
          subresource: 'status',
          verb: 'update',
        }),
    }),
  },
  'proxypools/status update': {
    operation: 'writing the status of ProxyPool',
    run: poolScenario('writing the status of ProxyPool'),
  },
  'configmaps get': { operation: 'writing ConfigMap', run: poolScenario('writing ConfigMap') },
  'configmaps create': { operation: 'writing ConfigMap', run: poolScenario('writing ConfigMap') },
  'configmaps update': { operation: 'writing ConfigMap', run: poolScenario('writing ConfigMap') },
  'deployments get': {
    operation: 'writing Deployment',
    run: gatewayScenario('writing Deployment'),
  },
  'deployments create': {
    operation: 'writing Deployment',
    run: gatewayScenario('writing Deployment'),
  },
  'deployments update': {
    operation: 'writing Deployment',
    run: gatewayScenario('writing Deployment', 'change'),
  },
  'deployments delete': {
    operation: 'deleting Deployment',
    run: gatewayScenario('deleting Deployment', 'disable'),
  },
  'services get': { operation: 'writing Service', run: gatewayScenario('writing Service') },
  'services create': { operation: 'writing Service', run: gatewayScenario('writing Service') },
  'services update': {
    operation: 'writing Service',
    run: gatewayScenario('writing Service', 'change'),
  },
  'services delete': {
    operation: 'deleting Service',
    run: gatewayScenario('deleting Service', 'disable'),
  },
  'providerhealths list': {
    operation: 'listing ProviderHealth',
    run: startScenario('listing ProviderHealth failed'),
  },
  'providerhealths get': {
    operation: 're-reading ProviderHealth',
    run: healthScenario(async (op) => {
      await op.operator.runHealth();
      server.faults.conflictNextWrites(1, { resource: 'providerhealths', subresource: 'status' });
    }),
  },
  'providerhealths create': {
    operation: 'creating ProviderHealth',
    run: healthScenario(),
  },
  'providerhealths delete': {
    operation: 'deleting ProviderHealth',
    run: async (n) => {
      const { logger, lines } = memoryLogger();
      const op = await operatorFor(n, logger);
      try {
        await op.operator.runHealth();
        const empty = await parseProvidersConfig(
          'installation: rbac\nproviders: []\n',
          op.registry,
        );
        if (!empty.ok) throw new Error('config');
        await op.operator.applyProviders(empty.config);
        const hit = lines.find(
          (l) => l.msg === 'deleting the ProviderHealth of a removed provider failed',
        );
        return hit === undefined ? '' : String(hit.err);
      } finally {
        await op.stop();
      }
    },
  },
  'providerhealths/status update': {
    operation: 'writing the status of ProviderHealth',
    run: healthScenario(),
  },
  'events create': {
    operation: 'recording the Created Event on Proxy',
    run: async (n) => {
      const { logger, lines } = memoryLogger();
      const ns = await namespace(n);
      const op = await operatorFor(n, logger, ns);
      op.operator.start();
      try {
        await createProxy(server, 'p', { provider: `lab${n}` }, ns);
        return await outcome(
          lines,
          'recording an Event failed',
          () => server.objects('', 'events', ns).length > 0,
        );
      } finally {
        await op.stop();
      }
    },
  },
  'pods get,list,create,delete': {
    operation: 'pods "proxy-rbac-',
    run: podScenario(false),
  },
  // The provider's own role makes a proxy's password-file Secret beside its Pod; the operator's
  // ClusterRole grants those verbs already (it keeps the Proxies' credentials in Secrets), so in
  // this deployment the rule is redundant: a Pod with credentials is made without it.
  'secrets get,create,update': {
    operation: '',
    run: podScenario(false, true),
  },
  // The provider's own role lists Proxies to find a Pod's owner; the operator's ClusterRole
  // grants that already (its informer lists them), so in this deployment the rule is redundant.
  'proxies list': {
    operation: '',
    run: podScenario(true),
  },
  'leases create': {
    operation: 'creating the leader election Lease',
    run: leaseScenario(false),
  },
  'leases get': {
    operation: 'reading the leader election Lease',
    run: leaseScenario(true),
  },
  'leases update': {
    operation: 'taking the leader election Lease',
    run: leaseScenario(true),
  },
};

const keyOf = (r: Rule) => `${r.resources.join(',')} ${r.verbs.join(',')}`;

beforeAll(async () => {
  server = await KubeTestServer.start();
  tmp = await tempDir();
  await installCrds(server);
  const docs = [
    await readFile(RBAC, 'utf8'),
    await readFile(`${COMPONENT}role.yaml`, 'utf8'),
    await readFile(`${COMPONENT}binding.yaml`, 'utf8'),
  ].flatMap((text) => parseAllDocuments(text).map((d) => d.toJS()));
  roles = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role') as Role[];
  bindings = docs.filter((d) => d.kind === 'ClusterRoleBinding' || d.kind === 'RoleBinding');
  componentBinding = bindings.find(
    (b) => (b.metadata as { name: string }).name === 'proxy-op-provider-kubernetes',
  );
  expect(
    (await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: NS } } })).status,
  ).toBe(201);
  const token = server.serviceAccountToken(NS, 'proxy-op');
  for (const d of [...roles, ...bindings] as Array<{
    kind: string;
    metadata: { namespace?: string };
  }>) {
    const plural = `${d.kind.toLowerCase()}s`;
    const path = d.metadata.namespace
      ? `/apis/rbac.authorization.k8s.io/v1/namespaces/${d.metadata.namespace}/${plural}`
      : `/apis/rbac.authorization.k8s.io/v1/${plural}`;
    expect((await call(server, 'POST', path, { body: d })).status).toBe(201);
  }
  sa = await clientFor(server, tmp.dir, { token });
  saKubeconfig = await server.writeKubeconfig(`${tmp.dir}/sa-kubeconfig`, { token });
});

afterAll(async () => {
  sa?.close();
  await server.stop();
  await tmp.dispose();
});

describe('the shipped RBAC', () => {
  it('has a scenario for every rule, and only the rules the scenarios need', () => {
    const keys = roles.flatMap((r) => r.rules.map(keyOf));
    expect(keys.sort()).toEqual(Object.keys(SCENARIOS).sort());
  });

  let n = 0;
  it('lets every operation through with every rule in place', async () => {
    await component(true);
    for (const [key, s] of Object.entries(SCENARIOS)) {
      server.faults.reset();
      expect(`${key}: ${await s.run(++n)}`).toBe(`${key}: `);
    }
  }, 120_000);

  it('fails each operation, naming it, when its one rule is removed', async () => {
    for (const role of roles) {
      await component(role.metadata.name === 'proxy-op-provider-kubernetes');
      for (let i = 0; i < role.rules.length; i++) {
        const rule = role.rules[i] as Rule;
        const s = SCENARIOS[keyOf(rule)];
        if (s === undefined) throw new Error(`no scenario for ${keyOf(rule)}`);
        if (s.operation === '') {
          // Redundant: other shipped rules grant each of its verbs on the same resource.
          const others = roles
            .filter((r) => r !== role)
            .flatMap((r) => r.rules)
            .filter((o) => o.resources.some((x) => rule.resources.includes(x)));
          const uncovered = rule.verbs.filter((v) => !others.some((o) => o.verbs.includes(v)));
          expect(others.length, keyOf(rule)).toBeGreaterThan(0);
          expect(uncovered, keyOf(rule)).toEqual([]);
          await putRole(
            role,
            role.rules.filter((_, j) => j !== i),
          );
          try {
            expect(await s.run(++n), keyOf(rule)).toBe('');
          } finally {
            await putRole(role, role.rules);
          }
          continue;
        }
        await putRole(
          role,
          role.rules.filter((_, j) => j !== i),
        );
        server.faults.reset();
        try {
          const err = await s.run(++n);
          const verb = rule.verbs[0] ?? '';
          const resource = rule.resources[0] ?? '';
          expect(err, keyOf(rule)).toContain(s.operation);
          expect(err, keyOf(rule)).toMatch(
            new RegExp(
              `is forbidden: User "system:serviceaccount:${NS}:proxy-op" cannot ${verb} resource "${resource}"`,
            ),
          );
          expect(err, keyOf(rule)).toMatch(
            /the operator's service account needs this right|grant the rules of rbac\/role\.yaml of @proxy-op\/provider-kubernetes/,
          );
        } finally {
          await putRole(role, role.rules);
        }
      }
    }
  }, 180_000);
});
