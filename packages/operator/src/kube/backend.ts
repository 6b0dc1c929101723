/**
 * `proxy-op run` on Kubernetes: the kubeconfig (or the Pod's service
 * account), leader election on a Lease, the informer-backed stores, the
 * credentials in Secrets and the pools' gateways as Deployments.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { DEFAULTS, type Settings } from '../defaults.js';
import { pagePort } from '../manager/page.js';
import type { RunBackend, RunContext, RunStores } from '../manager/run.js';
import { withoutCredentials } from '../page/snapshot.js';
import { defaultProvidersConfig } from '../providers/default.js';
import type { ProvidersConfig } from '../providers/file.js';
import { logDefaultProvider } from '../providers/read.js';
import { KubeClient } from './client.js';
import { SecretCredentialStore } from './credentials.js';
import { KubeGateways } from './gateways.js';
import { LeaderElector } from './leader.js';
import { KubePoolStore } from './pools.js';
import { KubeStore } from './store.js';

/** Where a run on Kubernetes finds its cluster and its Lease. */
export interface KubeRun {
  /** `--kubeconfig FILE`. */
  readonly kubeconfig?: string | undefined;
  /** `--context NAME`. */
  readonly context?: string | undefined;
  /** `--namespace NS`: the Proxies of this namespace only; every namespace when unset. */
  readonly namespace?: string | undefined;
  /** `--leader-election-namespace NS`: see {@link leaseNamespace}. */
  readonly leaderElectionNamespace?: string | undefined;
}

/** The settings a run on Kubernetes uses. */
export type KubeRunSettings = Pick<
  Settings,
  | 'leaderElect'
  | 'leaderElectionId'
  | 'leaseDurationMs'
  | 'renewDeadlineMs'
  | 'retryPeriodMs'
  | 'requestTimeoutMs'
  | 'gatewayImage'
  | 'gatewayRecheckMs'
>;

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The Lease's namespace: the flag, `$POD_NAMESPACE`, the service account's, else `proxy-op-system`. */
function leaseNamespace(flag: string | undefined): string {
  if (flag !== undefined) return flag;
  const env = process.env.POD_NAMESPACE;
  if (env !== undefined && env !== '') return env;
  try {
    const ns = readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
    if (ns !== '') return ns;
  } catch {
    // not in a Pod
  }
  return DEFAULTS.leaderElectionNamespace;
}

/** The Pod a leader election identity (`<pod>_<random>`, as `run` makes it) runs in. */
export function podOf(identity: string | undefined): string | undefined {
  return identity?.replace(/_[0-9a-f]{8}$/, '');
}

/**
 * Kubernetes as a backend of the shared run: it waits for the Lease
 * (unless leader election is off), then starts the informers. A stop lets
 * the reconciles in flight finish within the shutdown grace and releases
 * the Lease; losing the Lease stops at once.
 */
export async function kubeBackend(
  o: KubeRun & KubeRunSettings,
  ctx: RunContext,
): Promise<RunBackend> {
  const { logger, registry, read } = ctx;
  const client = await KubeClient.load({
    kubeconfig: o.kubeconfig,
    context: o.context,
    requestTimeoutMs: o.requestTimeoutMs,
  });
  const identity = `${hostname()}_${randomUUID().slice(0, 8)}`;
  logDefaultProvider(logger, read);
  const lease = leaseNamespace(o.leaderElectionNamespace);
  const elector = o.leaderElect
    ? new LeaderElector({
        client,
        namespace: lease,
        name: o.leaderElectionId,
        identity,
        leaseDurationMs: o.leaseDurationMs,
        renewDeadlineMs: o.renewDeadlineMs,
        retryPeriodMs: o.retryPeriodMs,
        logger,
      })
    : undefined;
  let state: 'starting' | 'standby' | 'leading' = 'starting';
  let store: KubeStore | undefined;
  let pools: KubePoolStore | undefined;
  return {
    graceful: true,
    lost: elector?.lost,
    role(page) {
      const holder = elector?.holder;
      const other = holder !== undefined && holder !== identity;
      return {
        store: 'kubernetes',
        // Leading shows once the Proxies are listed and served.
        state: state === 'leading' && store?.synced !== true ? 'starting' : state,
        where: withoutCredentials(client.server),
        identity,
        leader: other ? holder : undefined,
        leaderPod: other ? podOf(holder) : undefined,
        leaseNamespace: elector === undefined ? undefined : lease,
        port: pagePort(page),
      };
    },
    providers: async (c: ProvidersConfig | undefined) =>
      c !== undefined && c.providers.length > 0
        ? c
        : await defaultProvidersConfig(registry, c?.installation),
    starting() {
      logger.info(
        {
          server: client.server,
          namespace: o.namespace ?? '(all)',
          identity,
          leaderElection: elector === undefined ? 'off' : `${lease}/${o.leaderElectionId}`,
        },
        'proxy-op running on Kubernetes',
      );
    },
    async open(signal): Promise<RunStores | undefined> {
      if (elector !== undefined) {
        state = 'standby';
        try {
          await elector.acquire(signal);
        } catch {
          return undefined;
        }
      }
      state = 'leading';
      try {
        store = await KubeStore.start({
          client,
          namespace: o.namespace,
          logger,
          identity,
          signal,
        });
        pools = await KubePoolStore.start({
          client,
          proxies: store,
          namespace: o.namespace,
          logger,
          signal,
        });
      } catch {
        await store?.close();
        await elector?.release();
        return undefined;
      }
      return {
        store,
        pools,
        credentials: new SecretCredentialStore(client),
        gateways: new KubeGateways({
          client,
          image: o.gatewayImage,
          gatewayRecheckMs: o.gatewayRecheckMs,
          logger,
        }),
      };
    },
    started(stores) {
      logger.info(
        { proxies: stores.store.list().length, pools: pools?.listPools().length ?? 0 },
        'reconciling',
      );
    },
    // Ready while standing by, and once leading with every Proxy listed.
    ready: () => state === 'standby' || (state === 'leading' && store?.synced === true),
    async close(outcome) {
      await pools?.close();
      await store?.close();
      // Leadership lost: another replica may lead any moment, so nothing more is done here.
      if (outcome !== 'lost') await elector?.release();
    },
    dispose: () => client.close(),
  };
}
