// Test support for the Kubernetes store: the Kubernetes API test server (held to kubectl and
// client-node) with the operator's CRDs, plain HTTPS calls to it, and the operator in process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeTestServer } from '@proxy-op/kube-testserver';
import { customResourceDefinitions } from '../src/api/crds.js';
import type { Settings } from '../src/defaults.js';
import { KubeClient } from '../src/kube/client.js';
import { SecretCredentialStore } from '../src/kube/credentials.js';
import { KubePoolStore } from '../src/kube/pools.js';
import { KubeStore } from '../src/kube/store.js';
import { Operator } from '../src/manager/operator.js';
import type { PoolGateways } from '../src/pool/gateway.js';
import type { ProviderSet } from '../src/providers/set.js';

/** One HTTP exchange with the test server. */
export interface Reply {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies freely
  readonly body: any;
}

/** Sends one request to the server (admin unless a token is given); a body that is not JSON as text. */
export async function call(
  server: KubeTestServer,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; token?: string } = {},
): Promise<Reply> {
  const r = await server.request(method, path, {
    ...opts,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  return { status: r.status, body: r.body ?? r.text };
}

/** Creates (or replaces) the operator's CRDs and waits until they are served. */
export async function installCrds(server: KubeTestServer): Promise<void> {
  for (const crd of customResourceDefinitions()) {
    const r = await call(
      server,
      'POST',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      {
        body: crd,
      },
    );
    if (r.status !== 201 && r.status !== 409) throw new Error(JSON.stringify(r.body));
  }
  await until(
    async () => (await call(server, 'GET', '/apis/proxy-op.io/v1alpha1/proxies')).status === 200,
  );
}

/** A Proxy manifest. */
export function proxy(
  name: string,
  spec: Record<string, unknown> = {},
  namespace = 'default',
): Record<string, unknown> {
  return {
    apiVersion: 'proxy-op.io/v1alpha1',
    kind: 'Proxy',
    metadata: { name, namespace },
    spec: {
      provider: 'lab',
      placement: { machineType: 'small', image: 'debian-13' },
      allowedSources: ['10.0.0.0/8'],
      ...spec,
    },
  };
}

/** Creates a Proxy as a user would (admin token). */
export async function createProxy(
  server: KubeTestServer,
  name: string,
  spec: Record<string, unknown> = {},
  namespace = 'default',
): Promise<Reply> {
  const r = await call(
    server,
    'POST',
    `/apis/proxy-op.io/v1alpha1/namespaces/${namespace}/proxies`,
    {
      body: proxy(name, spec, namespace),
    },
  );
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

/** Reads a Proxy as stored (undefined when gone). */
export function stored(server: KubeTestServer, name: string, namespace = 'default') {
  return server
    .objects('proxy-op.io', 'proxies', namespace)
    .find((o) => (o.metadata as { name: string }).name === name) as
    | {
        metadata: { uid: string; finalizers?: string[]; generation: number };
        // biome-ignore lint/suspicious/noExplicitAny: tests read status fields freely
        status?: any;
        // biome-ignore lint/suspicious/noExplicitAny: tests read spec fields freely
        spec: any;
      }
    | undefined;
}

/** Waits until `cond` holds (polling), or fails with `what`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  ms = 10_000,
  what = 'condition',
): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A temp folder for kubeconfigs. */
export async function tempDir(): Promise<{ dir: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-kube-'));
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}

/** A KubeClient over a kubeconfig for `token` (admin by default). */
export async function clientFor(
  server: KubeTestServer,
  dir: string,
  opts: { token?: string; name?: string; server?: string } = {},
): Promise<KubeClient> {
  const file = join(dir, `${opts.name ?? 'kubeconfig'}-${Math.random().toString(36).slice(2)}`);
  let text = server.kubeconfig(opts.token === undefined ? {} : { token: opts.token });
  if (opts.server !== undefined) text = text.replace(server.url, opts.server);
  const { writeFile } = await import('node:fs/promises');
  await writeFile(file, text, { mode: 0o600 });
  return KubeClient.load({ kubeconfig: file, requestTimeoutMs: 5000 });
}

/** The operator in process over a KubeStore. */
export async function startOperator(
  client: KubeClient,
  providers: ProviderSet,
  opts: Partial<Settings> & { namespace?: string } = {},
) {
  const { namespace, ...settings } = opts;
  const store = await KubeStore.start({ client, namespace, identity: 'test' });
  const operator = new Operator({
    store,
    providers,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 0,
      backoffBaseMs: 20,
      backoffMaxMs: 200,
      ...settings,
    },
  });
  operator.start();
  return {
    store,
    operator,
    async stop() {
      await operator.stop();
      await store.close();
    },
  };
}

/** The operator and the pool controller in process over the Kubernetes store, as `run` has them. */
export async function startPoolOperator(
  client: KubeClient,
  providers: ProviderSet,
  opts: { gateways?: PoolGateways; settings?: Partial<Settings> } = {},
) {
  const store = await KubeStore.start({ client, identity: 'test' });
  const pools = await KubePoolStore.start({ client, proxies: store });
  const operator = new Operator({
    store,
    pools,
    providers,
    credentials: new SecretCredentialStore(client),
    gateways: opts.gateways,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 0,
      probeIntervalMs: 0,
      backoffBaseMs: 20,
      backoffMaxMs: 200,
      ...opts.settings,
    },
  });
  operator.start();
  return {
    store,
    async stop() {
      await operator.stop();
      await pools.close();
      await store.close();
    },
  };
}

export { KubeTestServer };
