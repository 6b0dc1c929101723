/**
 * Pools' gateways on Kubernetes: for a pool with `spec.gateway.enabled`, a
 * Deployment and a Service named `<pool>-gateway` running the operator
 * image's `proxy-op gateway`, which follows the `upstreams.json` key of the
 * pool's `<pool>-endpoints` Secret (mounted, so the kubelet keeps it
 * current), and a `kubernetes.io/basic-auth` Secret `<pool>-gateway` with
 * the clients' credential (generated once), its password-file line and the
 * client URL. All three are owned by the pool (the garbage collector takes
 * them with it) and deleted when the gateway is disabled. The Pods run as
 * the kubernetes provider's do: not root, no service account token, a
 * read-only root filesystem, no capabilities, the runtime's seccomp profile.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import { canonicalJson } from '../api/canonical-json.js';
import type { PoolGatewayStatus } from '../api/pool.js';
import { API_VERSION } from '../api/proxy.js';
import { credentialUrl, generateCredential, passwordFile } from '../credentials/credential.js';
import { type GatewayPlan, gatewayArgs, type PoolGateways } from '../pool/gateway.js';
import { isStatus, type KubeClient } from './client.js';
import { b64, unb64 } from './credentials.js';
import { getOrNothing, upsert } from './upsert.js';

/** The port the gateway's container listens on (the Service maps `spec.gateway.port` to it). */
export const GATEWAY_CONTAINER_PORT = 3128;
/** The user and group the gateway runs as (the operator image's nonroot). */
const RUN_AS = 65532;
const UPSTREAMS_DIR = '/etc/proxy-op/pool';
const AUTH_DIR = '/etc/proxy-op/gateway';

/** What {@link KubeGateways} is built with. */
export interface KubeGatewaysOptions {
  readonly client: KubeClient;
  /** The image whose `proxy-op gateway` the Pods run (the operator's). */
  readonly image: string;
  readonly logger?: Logger | undefined;
  /** How soon a gateway with no available Pod yet is looked at again. */
  readonly gatewayRecheckMs: number;
}

interface Raw {
  metadata?: { generation?: number };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  status?: { availableReplicas?: number; observedGeneration?: number };
}

/** The labels of a pool's gateway objects; the first two select its Pods. */
export function gatewayLabels(pool: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'proxy-op-gateway',
    'proxy-op.io/pool': pool,
    'app.kubernetes.io/managed-by': 'proxy-op',
  };
}

/** The Deployment of a pool's gateway. */
export function gatewayDeployment(plan: GatewayPlan, image: string): Record<string, unknown> {
  const name = `${plan.pool}-gateway`;
  const labels = gatewayLabels(plan.pool);
  const selector = {
    'app.kubernetes.io/name': labels['app.kubernetes.io/name'],
    'proxy-op.io/pool': plan.pool,
  };
  const basic = plan.auth === 'basic';
  const args = gatewayArgs(plan, {
    upstreams: `${UPSTREAMS_DIR}/upstreams.json`,
    listen: `0.0.0.0:${GATEWAY_CONTAINER_PORT}`,
    passwordFile: `${AUTH_DIR}/htpasswd`,
  });
  const secretVolume = (secretName: string, key: string) => ({
    secretName,
    items: [{ key, path: key }],
    defaultMode: 0o440,
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: plan.namespace, labels, ownerReferences: [ownerOf(plan)] },
    spec: {
      replicas: plan.replicas,
      selector: { matchLabels: selector },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: selector },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          // The drain, and a little more to close.
          terminationGracePeriodSeconds: plan.drainSeconds + 10,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUN_AS,
            runAsGroup: RUN_AS,
            fsGroup: RUN_AS,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'gateway',
              image,
              args,
              ports: [{ name: 'proxy', containerPort: GATEWAY_CONTAINER_PORT, protocol: 'TCP' }],
              readinessProbe: { tcpSocket: { port: 'proxy' }, periodSeconds: 5 },
              livenessProbe: {
                tcpSocket: { port: 'proxy' },
                initialDelaySeconds: 10,
                periodSeconds: 10,
              },
              resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'upstreams', mountPath: UPSTREAMS_DIR, readOnly: true },
                ...(basic ? [{ name: 'auth', mountPath: AUTH_DIR, readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            {
              name: 'upstreams',
              secret: secretVolume(`${plan.pool}-endpoints`, 'upstreams.json'),
            },
            ...(basic ? [{ name: 'auth', secret: secretVolume(name, 'htpasswd') }] : []),
          ],
        },
      },
    },
  };
}

/** The Service of a pool's gateway: `spec.gateway.port` to the Pods' proxy port. */
export function gatewayService(plan: GatewayPlan): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: `${plan.pool}-gateway`,
      namespace: plan.namespace,
      labels: gatewayLabels(plan.pool),
      ownerReferences: [ownerOf(plan)],
    },
    spec: {
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/name': 'proxy-op-gateway', 'proxy-op.io/pool': plan.pool },
      ports: [{ name: 'proxy', port: plan.port, targetPort: 'proxy', protocol: 'TCP' }],
      // A client held to one Proxy is held to one gateway Pod too.
      ...(plan.session === 'client' ? { sessionAffinity: 'ClientIP' } : {}),
    },
  };
}

function ownerOf(plan: GatewayPlan) {
  return {
    apiVersion: API_VERSION,
    kind: 'ProxyPool',
    name: plan.pool,
    uid: plan.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The URL clients in the cluster use, without a credential. */
export function serviceUrl(plan: GatewayPlan): string {
  return `http://${plan.pool}-gateway.${plan.namespace}.svc:${plan.port}`;
}

/** The pools' gateways as Kubernetes objects. */
export class KubeGateways implements PoolGateways {
  readonly #o: KubeGatewaysOptions;
  readonly #log: Logger;
  /** What was last written for each pool (`absent` once deleted). */
  readonly #applied = new Map<string, string>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #listeners = new Set<(key: string) => void>();

  constructor(o: KubeGatewaysOptions) {
    this.#o = o;
    this.#log = o.logger ?? silentLogger;
  }

  /** {@inheritDoc PoolGateways.watch} */
  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc PoolGateways.gone} */
  async gone(key: string): Promise<void> {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    this.#applied.delete(key);
  }

  /** {@inheritDoc PoolGateways.stop} */
  async stop(): Promise<void> {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }

  /** {@inheritDoc PoolGateways.sync} */
  async sync(
    key: string,
    plan: GatewayPlan | undefined,
    verified: number,
  ): Promise<PoolGatewayStatus | undefined> {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    const [namespace, pool] = key.split('/') as [string, string];
    const name = `${pool}-gateway`;
    if (plan === undefined) {
      if (this.#applied.get(key) !== 'absent') await this.#remove(namespace, name);
      this.#applied.set(key, 'absent');
      return undefined;
    }
    const secret = plan.auth === 'basic' ? await this.#credential(plan) : undefined;
    const deployment = gatewayDeployment(plan, this.#o.image);
    const service = gatewayService(plan);
    const text = canonicalJson({ deployment, service, secret: secret ?? null });
    if (this.#applied.get(key) !== text) {
      if (plan.auth === 'none') await this.#delete(namespace, 'secrets', 'Secret', name);
      await this.#write('apps/v1', 'deployments', 'Deployment', deployment, namespace, name);
      await this.#write('v1', 'services', 'Service', service, namespace, name, (old) => {
        // The cluster IPs are the API server's to keep: a replacement carries them over.
        const spec = (old.spec ?? {}) as Record<string, unknown>;
        return {
          spec: {
            ...(service.spec as Record<string, unknown>),
            clusterIP: spec.clusterIP,
            clusterIPs: spec.clusterIPs,
          },
        };
      });
      this.#applied.set(key, text);
      this.#log.info({ pool: key, url: serviceUrl(plan) }, 'gateway objects written');
    }
    const d = await getOrNothing<Raw>(
      this.#o.client,
      `reading Deployment ${namespace}/${name}`,
      `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
    );
    // Deleted by hand: written again on the next look.
    if (d === undefined) this.#applied.delete(key);
    const current = (d?.status?.observedGeneration ?? 0) >= (d?.metadata?.generation ?? 1);
    const available = current && (d?.status?.availableReplicas ?? 0) > 0;
    const ready = available && verified > 0;
    if (!available) {
      const t = setTimeout(() => {
        this.#timers.delete(key);
        for (const l of this.#listeners) l(key);
      }, this.#o.gatewayRecheckMs);
      t.unref();
      this.#timers.set(key, t);
    }
    const message = !available
      ? `the Deployment ${namespace}/${name} has no available Pod yet`
      : 'no verified Proxy to send clients to yet';
    return {
      url: serviceUrl(plan),
      ready,
      ...(secret === undefined ? {} : { secretName: name }),
      ...(ready ? {} : { message }),
    };
  }

  /** The clients' credential Secret: kept as it is once made, its URL brought up to date. */
  async #credential(plan: GatewayPlan): Promise<Record<string, string>> {
    const { namespace } = plan;
    const name = `${plan.pool}-gateway`;
    const old = await getOrNothing<Raw>(
      this.#o.client,
      `reading Secret ${namespace}/${name}`,
      `/api/v1/namespaces/${namespace}/secrets/${name}`,
    );
    const username = unb64(old?.data?.username);
    const password = unb64(old?.data?.password);
    const htpasswd = unb64(old?.data?.htpasswd);
    let data: Record<string, string>;
    if (username !== undefined && password !== undefined && htpasswd !== undefined) {
      data = { username, password, htpasswd };
    } else {
      const c = generateCredential(name);
      const file = passwordFile({
        source: 'generated',
        current: c,
        rotatedTime: new Date().toISOString(),
      });
      data = { username: c.username, password: c.password, htpasswd: Buffer.from(file).toString() };
    }
    data.url = credentialUrl(data as { username: string; password: string }, serviceUrl(plan));
    if (unb64(old?.data?.url) !== data.url || old === undefined) {
      await this.#write(
        'v1',
        'secrets',
        'Secret',
        {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/basic-auth',
          metadata: {
            name,
            namespace,
            labels: gatewayLabels(plan.pool),
            ownerReferences: [ownerOf(plan)],
          },
          data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
        },
        namespace,
        name,
      );
    }
    // What the pass compares: a hash-free stand-in (the credential never leaves this object).
    return { username: data.username as string, url: serviceUrl(plan) };
  }

  async #write(
    apiVersion: string,
    resource: string,
    kind: string,
    body: Record<string, unknown>,
    namespace: string,
    name: string,
    keep?: (existing: Record<string, unknown>) => Record<string, unknown>,
  ): Promise<void> {
    const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    await upsert(this.#o.client, {
      operation: `writing ${kind} ${namespace}/${name}`,
      collection: `${base}/namespaces/${namespace}/${resource}`,
      name,
      body: body as { metadata: Record<string, unknown> },
      keep,
    });
  }

  async #remove(namespace: string, name: string): Promise<void> {
    await this.#delete(namespace, 'deployments', 'Deployment', name);
    await this.#delete(namespace, 'services', 'Service', name);
    await this.#delete(namespace, 'secrets', 'Secret', name);
  }

  async #delete(namespace: string, resource: string, kind: string, name: string): Promise<void> {
    const base = resource === 'deployments' ? '/apis/apps/v1' : '/api/v1';
    try {
      await this.#o.client.request({
        operation: `deleting ${kind} ${namespace}/${name}`,
        method: 'DELETE',
        path: `${base}/namespaces/${namespace}/${resource}/${name}`,
      });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }
}
