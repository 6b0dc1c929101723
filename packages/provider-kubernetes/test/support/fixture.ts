/**
 * The provider on the Kubernetes API test server, with the harness the
 * conformance kit drives: a fresh server per fixture, the HTTPS front
 * between them (request counts, held and garbled requests), real
 * ResourceQuotas the server's quota admission enforces, the "kubelet"
 * that schedules and runs Pods, and a service account bound to exactly the
 * provider's Role (`rbac/role.yaml`).
 *
 * Peer: the Kubernetes API test server, reached through the real
 * `@kubernetes/client-node` and undici.
 *
 * @module
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadYaml } from '@kubernetes/client-node';
import {
  BudgetError,
  type CreateRequest,
  createProvider,
  type Provider,
  type ProviderDeps,
} from '@proxy-op/contract';
import { parsePasswordFile, verifyPassword } from '@proxy-op/forward-proxy';
import { KubeTestServer } from '@proxy-op/kube-testserver';
import type { BackendHarness, ClassifyCase, ConformanceFixture } from '@proxy-op/providertest';
import { CONFIG_DEFAULTS } from '../../src/config.js';
import {
  CredentialsError,
  KubernetesApiError,
  KubernetesConnectionError,
} from '../../src/errors.js';
import { ids as podIds } from '../../src/id.js';
import { APP_LABELS, markLabels } from '../../src/labels.js';
import { providerModule } from '../../src/module.js';
import { buildPod, SQUID_CONF_ANNOTATION } from '../../src/pod.js';
import { buildAuthSecret } from '../../src/secret.js';
import { admin, adminOk, podPath } from './admin.js';
import { ApiFront } from './front.js';
import { KUBELET_SYNC_PERIOD_MS, Kubelet, type KubeletOptions } from './kubelet.js';
import type { MountedVolume } from './volumes.js';

/**
 * The password file sentinel: a user of the password file every
 * conformance Create sends, which must never leak (like cloud-init).
 */
export const PASSWORD_FILE_SENTINEL = 'passwd-SENTINEL-9e41-never-log-me';

/** The password file the conformance requests carry: one SHA-512-crypt line. */
export const SENTINEL_PASSWORD_FILE = `${PASSWORD_FILE_SENTINEL}:$6$c0nf0rm4nce$zdTiAdTe1HWa1XeWse.cJas49Rvd5qYT..YV4eMEkr/3qKYLFYS1rWF9aKghrLqnW5lfH9IvGxs/2P2mHxDNP1\n`;

/** The credential sentinel: a token the provider presents, which must never leak. */
export const KUBE_CREDENTIAL_SENTINEL = 'kube-token-SENTINEL-4c7e-never-log-me';

/** The namespace of the operator's service account. */
export const OPERATOR_NAMESPACE = 'proxy-op';
/** The operator's service account, bound to the provider's Role. */
export const OPERATOR_ACCOUNT = 'operator';

/** The provider's Role, as shipped in `rbac/role.yaml`. */
export async function providerRole(): Promise<Record<string, unknown>> {
  const file = fileURLToPath(new URL('../../rbac/role.yaml', import.meta.url));
  return loadYaml<Record<string, unknown>>(await readFile(file, 'utf8'));
}

/** Creates a namespace (nothing when it exists). */
export async function ensureNamespace(server: KubeTestServer, name: string): Promise<void> {
  const r = await admin(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name } } });
  if (r.status !== 201 && r.status !== 409) throw new Error(`namespace ${name}: ${r.status}`);
}

/**
 * Applies the provider's Role and binds it to `account`: cluster-wide, or
 * in `namespace` only (a RoleBinding to the ClusterRole).
 */
export async function grantProviderRole(
  server: KubeTestServer,
  account: { namespace: string; name: string },
  namespace?: string,
): Promise<void> {
  const role = await providerRole();
  const name = (role.metadata as { name: string }).name;
  const existing = await admin(
    server,
    'GET',
    `/apis/rbac.authorization.k8s.io/v1/clusterroles/${name}`,
  );
  if (existing.status === 404) {
    await adminOk(server, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      body: role,
    });
  }
  const binding = {
    metadata: { name: `${name}-${account.namespace}-${account.name}`, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', namespace: account.namespace, name: account.name }],
  };
  await adminOk(
    server,
    'POST',
    namespace === undefined
      ? '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings'
      : `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
    { body: binding },
  );
}

/** A kubeconfig for `server` (the front) trusting `ca`, with no credential of its own. */
export function kubeconfigText(server: string, ca: string, token?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${Buffer.from(ca).toString('base64')}`,
    'users:',
    '- name: provider',
    `  user: {${token === undefined ? '' : ` token: ${token} `}}`,
    'contexts:',
    '- name: test',
    '  context: { cluster: test, user: provider }',
    'current-context: test',
    '',
  ].join('\n');
}

/** The config block of the fixture's provider, before `patch`. */
export function fixtureConfig(kubeconfig: string, tokenFile: string): Record<string, unknown> {
  return {
    kubeconfig,
    tokenFile,
    allowedSources: ['10.0.0.0/8'],
    zones: ['zone-a', 'zone-b'],
    images: { squid: { image: 'docker.io/ubuntu/squid:6.10-24.10_beta' } },
    machineTypes: {
      small: { cpu: '100m', memory: '128Mi' },
      large: { cpu: '500m', memory: '512Mi', cpuLimit: '1' },
    },
    requestTimeoutSeconds: 3,
  };
}

/** Options of {@link createKubeFixture}. */
export interface KubeFixtureOptions {
  /** Changes to the config block. */
  readonly config?: Record<string, unknown> | undefined;
  /** Extra deps for createProvider. */
  readonly deps?: Partial<ProviderDeps> | undefined;
  /** The kubelet's options (a shorter sync period, which `authSettleMs` follows). */
  readonly kubelet?: KubeletOptions | undefined;
}

/** What `authSettleMs` allows beyond the kubelet's sync period: a loaded machine's delays. */
const AUTH_SETTLE_MARGIN_MS = 5_000;

/** What a fixture gives a test besides the conformance pair. */
export interface KubeFixture extends ConformanceFixture {
  readonly server: KubeTestServer;
  readonly front: ApiFront;
  readonly kubelet: Kubelet;
  /** The token file the provider reads on every request. */
  readonly tokenFile: string;
  readonly kubeconfig: string;
  readonly dir: string;
  readonly config: Record<string, unknown>;
  /** A token of the operator's service account (bound to the Role). */
  grantedToken(): string;
  /** Builds another provider over the same server and front (another config or deps). */
  another(patch?: Record<string, unknown>, deps?: Partial<ProviderDeps>): Promise<Provider>;
}

/**
 * A Create request for `name` in `default` with a placement the fixture
 * accepts and a UID made from the name, changed by `patch`.
 */
export function proxyRequest(name: string, patch: Partial<CreateRequest> = {}): CreateRequest {
  return {
    name,
    namespace: 'default',
    uid: `6c1d5f0e-2b7a-4c0e-9d43-${name.replace(/\W/g, '').padStart(12, '0').slice(-12)}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { zone: 'zone-a', machineType: 'small', image: 'squid' },
    ...patch,
  };
}

/** The path of a Pod from its provider ID. */
export function pathOf(id: string): { namespace: string; name: string } {
  const parts = podIds.parse(id);
  if (parts === undefined) throw new Error(`harness: not a kubernetes provider ID: ${id}`);
  return parts;
}

/** Builds the provider over a fresh test server, with its harness. */
export async function createKubeFixture(
  deps: ProviderDeps,
  opts: KubeFixtureOptions = {},
): Promise<KubeFixture> {
  const server = await KubeTestServer.start();
  const front = await ApiFront.start(server.url, server.caCert);
  const kubelet = new Kubelet(server, opts.kubelet);
  let failNext = false;
  front.onPodCreated = async (ns, name) => {
    await kubelet.schedule(ns, name);
    if (!failNext) return;
    failNext = false;
    // The kubelet refuses the Pod once it was accepted (admission on the node: out of CPU).
    await kubelet.setPhase(ns, name, 'Failed');
  };
  await ensureNamespace(server, OPERATOR_NAMESPACE);
  await grantProviderRole(server, { namespace: OPERATOR_NAMESPACE, name: OPERATOR_ACCOUNT });
  const grantedToken = () => server.serviceAccountToken(OPERATOR_NAMESPACE, OPERATOR_ACCOUNT);
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-kube-'));
  const tokenFile = join(dir, 'token');
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(tokenFile, `${grantedToken()}\n`, { mode: 0o600 });
  await writeFile(kubeconfig, kubeconfigText(front.url, front.cert), { mode: 0o600 });
  const config = { ...fixtureConfig(kubeconfig, tokenFile), ...opts.config };
  const providers: Provider[] = [];
  const build = async (patch: Record<string, unknown> = {}, more: Partial<ProviderDeps> = {}) => {
    const p = await createProvider(
      providerModule,
      'kube-a',
      { ...config, ...patch },
      { ...deps, ...opts.deps, ...more },
    );
    providers.push(p);
    return p;
  };
  const provider = await build();
  // The Secret volumes of the Pods a credential check has looked at, by Pod, with its UID.
  const mounts = new Map<string, { uid: string; volumes: MountedVolume[] }>();
  const images = config.images as Record<string, { image: string }>;
  const firstImage = Object.values(images)[0]!.image;

  // A proxy Pod as the provider builds it, asking for credentials of `realm` when given.
  const proxyPod = (
    namespace: string,
    name: string,
    uid: string,
    installation: string | undefined,
    realm: string | undefined,
  ) => {
    const machineTypes = config.machineTypes as Record<string, { cpu: string; memory: string }>;
    return buildPod({
      namespace,
      name,
      uid,
      installation: installation ?? 'default',
      port: 3128,
      allowedSources: ['10.0.0.0/8'],
      connectPorts: [443],
      image: {
        image: firstImage,
        squidPath: CONFIG_DEFAULTS.squidPath,
        runAsUser: CONFIG_DEFAULTS.runAsUser,
        runAsGroup: CONFIG_DEFAULTS.runAsGroup,
      },
      machineType: Object.values(machineTypes)[0]!,
      imagePullSecrets: [],
      ...(realm === undefined
        ? {}
        : { auth: { realm, credentialsTtlSeconds: CONFIG_DEFAULTS.credentialsTtlSeconds } }),
    });
  };
  // An unmarked Pod is something else; a marked one is a proxy Pod (of the Go original, or
  // another installation's) asking for the credentials the base request asks for.
  const plant = async (name: string, labels: Record<string, string>, run: boolean) => {
    const ns = 'default';
    const body =
      Object.keys(labels).length === 0
        ? {
            metadata: { name, labels: { 'app.kubernetes.io/name': 'something-else' } },
            spec: { containers: [{ name: 'main', image: firstImage }] },
          }
        : proxyPod(ns, name, '', undefined, harness.baseRequest.auth?.realm);
    if (Object.keys(labels).length > 0) {
      body.metadata = {
        name,
        labels: { ...APP_LABELS, ...labels },
        annotations: body.metadata?.annotations ?? {},
      };
    }
    await adminOk(server, 'POST', `/api/v1/namespaces/${ns}/pods`, { body });
    await kubelet.schedule(ns, name);
    if (run) await kubelet.run(ns, name, '10.9.9.8');
    return podIds.format({ namespace: ns, name });
  };
  const plantedLabels = (mark: { uid: string; installation?: string | undefined }) => {
    const labels = markLabels(mark.uid, mark.installation ?? 'default');
    if (mark.installation === undefined) delete labels['proxy-operator-installation'];
    return labels;
  };
  // A ResourceQuota of `hard` pods in the namespace, enforced by the test
  // server's quota admission (refusals in the real plugin's words) once
  // its controller has filled in the status.
  const fillQuota = async (namespace: string, hard: number) => {
    await adminOk(server, 'POST', `/api/v1/namespaces/${namespace}/resourcequotas`, {
      body: {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'proxy-quota' },
        spec: { hard: { pods: String(hard) } },
      },
    });
    await server.settled();
  };

  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { zone: 'zone-a', machineType: 'small', image: 'squid' },
      // Every conformance proxy asks for credentials, so every check counts its Secret too.
      auth: {
        realm: 'proxy-op conformance',
        passwordFile: new TextEncoder().encode(SENTINEL_PASSWORD_FILE),
      },
    },
    invalidPlacements: [
      {
        placement: { zone: 'zone-a', machineType: 'huge', image: 'squid' },
        field: 'placement.machineType',
      },
      { placement: { zone: 'zone-a', image: 'squid' }, field: 'placement.machineType' },
      {
        placement: { zone: 'zone-a', machineType: 'small', image: 'windows' },
        field: 'placement.image',
      },
      { placement: { zone: 'zone-a', machineType: 'small' }, field: 'placement.image' },
      {
        placement: { zone: 'mars', machineType: 'small', image: 'squid' },
        field: 'placement.zone',
      },
      {
        placement: { region: 'eu', zone: 'zone-a', machineType: 'small', image: 'squid' },
        field: 'placement.region',
      },
    ],
    backendCalls: () => front.count,
    instanceCount: async () => kubelet.pods().length,
    // The password files' Secrets, once the garbage collector has removed those of gone Pods.
    secondaryCount: async () => {
      await server.settled();
      return server
        .objects('', 'secrets')
        .filter(
          (o) =>
            (o.metadata as { labels?: Record<string, string> }).labels?.[
              'app.kubernetes.io/managed-by'
            ] === 'proxy-op',
        ).length;
    },
    setRunning: async (id, ip) => {
      const { namespace, name } = pathOf(id);
      await kubelet.run(namespace, name, ip);
    },
    setState: async (id, state) => {
      const { namespace, name } = pathOf(id);
      if (state === 'running') await kubelet.resume(namespace, name);
      // The node stopped reporting: the Pod may or may not run.
      else if (state === 'stopped') await kubelet.setPhase(namespace, name, 'Unknown');
      // A phase this provider has no mapping for.
      else await kubelet.setPhase(namespace, name, 'Suspended');
    },
    rewriteMark: async (id, mark) => {
      const { namespace, name } = pathOf(id);
      await adminOk(server, 'PATCH', podPath(namespace, name), {
        contentType: 'application/merge-patch+json',
        body: { metadata: { labels: { 'proxy-operator-uid': mark.uid } } },
      });
    },
    replaceInstance: async (id, mark) => {
      const { namespace, name } = pathOf(id);
      await kubelet.remove(namespace, name);
      await plant(name, mark === undefined ? {} : plantedLabels(mark), true);
    },
    holdNextDelete: (id) => {
      const { namespace, name } = pathOf(id);
      return front.holdNextDelete(podPath(namespace, name));
    },
    plantNeverStarted: async (req: CreateRequest) => {
      const pod = proxyPod(req.namespace, req.name, req.uid, req.installation, req.auth?.realm);
      const planted = await adminOk(server, 'POST', `/api/v1/namespaces/${req.namespace}/pods`, {
        body: pod,
      });
      if (req.auth !== undefined) {
        const secret = buildAuthSecret(
          {
            namespace: req.namespace,
            name: req.name,
            uid: planted.body.metadata.uid,
            markUid: req.uid,
            installation: req.installation ?? 'default',
          },
          req.auth.passwordFile,
        );
        await adminOk(server, 'POST', `/api/v1/namespaces/${req.namespace}/secrets`, {
          body: secret,
        });
      }
      await kubelet.schedule(req.namespace, req.name);
      return podIds.format({ namespace: req.namespace, name: req.name });
    },
    plantUnmarked: (name) => plant(name, {}, true),
    plantMarked: (name, mark) => plant(name, plantedLabels(mark), true),
    blockCalls: (skip) => front.blockCalls(skip),
    injectMalformed: () => front.injectMalformed(),
    exhaustCapacity: () =>
      fillQuota('default', kubelet.pods().filter((p) => p.metadata.namespace === 'default').length),
    callBudgetMs: 3000,
    classifyCases: CLASSIFY_CASES,
    classify: (op, err) => providerModule.classify(op, err),
    checkTargets: ['apiserver'],
    checkScenarios: [
      { name: 'the API server answers and the Role allows', arrange: () => {}, want: 'Reachable' },
      {
        name: 'the token is refused',
        arrange: () => writeFile(tokenFile, 'not-a-known-token\n'),
        want: 'Unauthorized',
      },
      {
        name: 'the service account has no Role',
        arrange: () =>
          writeFile(tokenFile, `${server.serviceAccountToken(OPERATOR_NAMESPACE, 'nobody')}\n`),
        want: 'Forbidden',
      },
      {
        name: 'the API server cannot be reached',
        arrange: () => front.setUnreachable(true),
        want: 'Unreachable',
      },
      {
        name: 'a ResourceQuota leaves no room',
        arrange: () => fillQuota('default', 0),
        want: 'QuotaExceeded',
      },
      {
        name: 'the token file is missing',
        arrange: () => rm(tokenFile),
        want: 'CredentialsUnavailable',
      },
      {
        name: 'the kubeconfig trusts another CA',
        arrange: async () => {
          const other = await KubeTestServer.start();
          try {
            await writeFile(kubeconfig, kubeconfigText(front.url, other.caCert));
          } finally {
            await other.stop();
          }
        },
        want: 'CertificateInvalid',
      },
    ],
    credentialSentinel: KUBE_CREDENTIAL_SENTINEL,
    rejectCredential: async () => {
      await writeFile(tokenFile, `${KUBE_CREDENTIAL_SENTINEL}\n`);
      // A careless proxy in front of the API server echoing the token it refused.
      server.faults.fail(401, {
        reason: 'Unauthorized',
        message: `Unauthorized: bearer token ${KUBE_CREDENTIAL_SENTINEL} is not valid`,
      });
    },
    rotateCredential: async () => {
      server.faults.reset();
      await writeFile(tokenFile, `${grantedToken()}\n`);
    },
    settle: () => kubelet.settle(),
    // The conformance Pods run no Squid (no container runs here), so the answer is the one
    // Squid's basic_ncsa_auth would give: the password file the Pod's Squid configuration
    // names, read where the kubelet stand-in mounts it from the Pod's Secret volume (mounted on
    // the first check, as the kubelet does before the container starts, then kept up to date
    // once per sync period), and the credential checked against its line with verifyPassword.
    // Squid's credentialsttl is not modelled here; test/auth-squid.test.ts holds a real Squid
    // to it.
    acceptsCredential: async (id, credential) => {
      const { namespace, name } = pathOf(id);
      const pod = kubelet.pod(namespace, name);
      if (pod === undefined) throw new Error(`harness: no Pod ${namespace}/${name}`);
      const conf = pod.metadata.annotations?.[SQUID_CONF_ANNOTATION] ?? '';
      const file = /^auth_param basic program \S+ (\S+)$/m.exec(conf)?.[1];
      // A Squid without an authentication helper serves its sources alone: anyone is in.
      if (file === undefined) return true;
      const uid = (pod.metadata as { uid?: string }).uid ?? '';
      let mounted = mounts.get(`${namespace}/${name}`);
      if (mounted?.uid !== uid) {
        mounted = { uid, volumes: await kubelet.volumes.mount(pod) };
        mounts.set(`${namespace}/${name}`, mounted);
      }
      const volume = mounted.volumes.find((v) => file.startsWith(`${v.mountPath}/`));
      if (volume === undefined) {
        throw new Error(`harness: no volume of Pod ${namespace}/${name} holds ${file}`);
      }
      const text = await readFile(
        join(volume.hostDir, file.slice(volume.mountPath.length + 1)),
        'utf8',
      );
      const hash = parsePasswordFile(text).get(credential.username);
      return hash !== undefined && verifyPassword(credential.password, hash);
    },
    authSettleMs: (opts.kubelet?.syncPeriodMs ?? KUBELET_SYNC_PERIOD_MS) + AUTH_SETTLE_MARGIN_MS,
    failNextCreateLater: () => {
      failNext = true;
    },
  };
  return {
    provider,
    harness,
    server,
    front,
    kubelet,
    tokenFile,
    kubeconfig,
    dir,
    config,
    grantedToken,
    another: build,
    async cleanup() {
      await kubelet.stopAll();
      for (const p of providers) await p.close?.();
      await front.stop();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const status = (code: number, reason: string, message: string, details = {}) =>
  new KubernetesApiError(code, reason, message, details);

/** Realistic failures as the client sees them, with their classes. */
export const CLASSIFY_CASES: readonly ClassifyCase[] = [
  {
    name: '404 pods "x" not found',
    op: 'get',
    error: status(404, 'NotFound', 'pods "proxy-a" not found', { name: 'proxy-a', kind: 'pods' }),
    want: 'NotFound',
  },
  {
    name: '404 namespaces "x" not found (create in a missing namespace)',
    op: 'create',
    error: status(404, 'NotFound', 'namespaces "gone" not found', {
      name: 'gone',
      kind: 'namespaces',
    }),
    want: 'NotFound',
  },
  {
    name: '403 RBAC: cannot create pods',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods is forbidden: User "system:serviceaccount:proxy-op:nobody" cannot create resource "pods" in API group "" in the namespace "default"',
      { kind: 'pods' },
    ),
    want: 'Permanent',
  },
  {
    name: '403 ResourceQuota: exceeded quota',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods "proxy-a" is forbidden: exceeded quota: proxy-quota, requested: pods=1, used: pods=3, limited: pods=3',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'QuotaExceeded',
  },
  {
    name: '403 ResourceQuota: a limit must be set',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods "proxy-a" is forbidden: failed quota: compute: must specify limits.cpu for: squid',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'Permanent',
  },
  {
    name: '403 ResourceQuota: usage not calculated yet',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods "proxy-a" is forbidden: status unknown for quota: proxy-quota, resource: pods',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'Transient',
  },
  {
    name: '403 PodSecurity',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods "proxy-a" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'Permanent',
  },
  {
    name: '403 namespace being terminated',
    op: 'create',
    error: status(
      403,
      'Forbidden',
      'pods "proxy-a" is forbidden: unable to create new content in namespace gone because it is being terminated',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'Transient',
  },
  {
    name: '401 Unauthorized',
    op: 'list',
    error: status(401, 'Unauthorized', 'Unauthorized'),
    want: 'Permanent',
  },
  {
    name: '422 Invalid',
    op: 'create',
    error: status(
      422,
      'Invalid',
      'Pod "proxy-a" is invalid: spec.containers[0].image: Required value',
      { name: 'proxy-a', kind: 'Pod' },
    ),
    want: 'Permanent',
  },
  {
    name: '409 Conflict: a UID precondition failed',
    op: 'delete',
    error: status(
      409,
      'Conflict',
      'Operation cannot be fulfilled on pods "proxy-a": Precondition failed: UID in precondition: 1, UID in object meta: 2',
      { name: 'proxy-a', kind: 'pods' },
    ),
    want: 'Transient',
  },
  {
    name: '429 TooManyRequests',
    op: 'get',
    error: status(429, 'TooManyRequests', 'the server has received too many requests'),
    want: 'Transient',
  },
  {
    name: '500 InternalError',
    op: 'get',
    error: status(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out'),
    want: 'Transient',
  },
  {
    name: '503 from a proxy in front, no Status body',
    op: 'list',
    error: status(503, '', ''),
    want: 'Transient',
  },
  {
    name: 'connection refused',
    op: 'get',
    error: new KubernetesConnectionError(
      'https://10.96.0.1:443',
      'ECONNREFUSED',
      new Error('connect'),
    ),
    want: 'Transient',
  },
  {
    name: 'a certificate that does not verify',
    op: 'get',
    error: new KubernetesConnectionError(
      'https://10.96.0.1:443',
      'SELF_SIGNED_CERT_IN_CHAIN',
      new Error('self-signed certificate in certificate chain'),
    ),
    want: 'Permanent',
  },
  {
    name: 'a request past its budget',
    op: 'get',
    error: new BudgetError('readPod', 30_000),
    want: 'Transient',
  },
  {
    name: 'the token file is missing',
    op: 'create',
    error: new CredentialsError('the token file /t does not exist (yet)', true),
    want: 'Transient',
  },
  {
    name: 'the token file holds no token',
    op: 'create',
    error: new CredentialsError('the token file /t does not hold one token', false),
    want: 'Permanent',
  },
];
