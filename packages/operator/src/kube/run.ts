/**
 * `proxy-op run` on Kubernetes: the kubeconfig (or the Pod's service
 * account), leader election on a Lease, the informer-backed store, the
 * metrics endpoints, and a graceful stop on SIGTERM.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import type { Logger } from '@proxy-op/contract';
import type { LevelWithSilent } from 'pino';
import { UsageError } from '../cli/args.js';
import { loadProviders, logDefaultProvider, reloadProvidersOnChange } from '../cli/providers.js';
import { DEFAULTS } from '../defaults.js';
import { buildOperator, pagePort, podOf, startPage } from '../manager/assemble.js';
import { startStatusView } from '../page/live-table.js';
import { withoutCredentials } from '../page/snapshot.js';
import { type ProbeTargetOptions, startOwnTarget } from '../probe/target.js';
import { createLogger } from '../process/log.js';
import { startTracing } from '../process/otel.js';
import { defaultProvidersConfig } from '../providers/default.js';
import type { ProvidersConfig } from '../providers/file.js';
import { ProviderRegistry } from '../providers/registry.js';
import { ProviderSet } from '../providers/set.js';
import type { OperatorOptions } from '../proxy/controller.js';
import type { KubeClient } from './client.js';
import { SecretCredentialStore } from './credentials.js';
import { KubeGateways } from './gateways.js';
import type { KubePoolStore } from './pools.js';
import type { KubeStore } from './store.js';

/** What `run` on Kubernetes is given by the flags. */
export interface KubeRunOptions {
  readonly opts: OperatorOptions;
  readonly level: LevelWithSilent;
  readonly output: 'table' | 'json';
  readonly providersFile: string | undefined;
  readonly providersPollMs: number;
  readonly listen: string;
  /** Where the status page listens (`off`: no page); the leader serves the data, a standby says who leads. */
  readonly statusListen: string;
  readonly kubeconfig: string | undefined;
  readonly context: string | undefined;
  readonly namespace: string | undefined;
  readonly leaderElect: boolean;
  readonly leaseNamespace: string | undefined;
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly shutdownGraceMs: number;
  readonly requestTimeoutMs: number;
  /** The image of the pools' gateway Pods. */
  readonly gatewayImage: string;
  /** The operator's own probe target; undefined: none. */
  readonly probeTarget: ProbeTargetOptions | undefined;
}

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
  return DEFAULTS.leaseNamespace;
}

/**
 * `proxy-op run` on Kubernetes: waits for the Lease (unless leader election
 * is off), then starts the informer and the operator. SIGTERM or SIGINT
 * lets the reconciles in flight finish within the shutdown grace, stops, and
 * releases the Lease; losing the Lease stops at once with exit code 1.
 */
export async function runOnKubernetes(o: KubeRunOptions): Promise<number> {
  const tracing = await startTracing();
  const logger: Logger = createLogger({ level: o.level });
  const registry = new ProviderRegistry();
  const read = await loadProviders(o.providersFile, registry);
  if (read === undefined) return 2;
  const { KubeClient } = await import('./client.js');
  const { KubeStore } = await import('./store.js');
  const { LeaderElector } = await import('./leader.js');
  const poolsModule = await import('./pools.js');
  let client: KubeClient;
  try {
    client = await KubeClient.load({
      kubeconfig: o.kubeconfig,
      context: o.context,
      requestTimeoutMs: o.requestTimeoutMs,
    });
  } catch (err) {
    throw new UsageError(`cannot use the kubeconfig: ${(err as Error).message}`);
  }
  const identity = `${hostname()}_${randomUUID().slice(0, 8)}`;
  const config = async (c: ProvidersConfig | undefined) =>
    c !== undefined && c.providers.length > 0
      ? c
      : await defaultProvidersConfig(registry, c?.installation);
  logDefaultProvider(logger, read);
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    logger.info({ signal: sig }, 'stopping');
    stop.abort(new Error(`stopped by ${sig}`));
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));

  let state: 'starting' | 'standby' | 'leading' = 'starting';
  let store: KubeStore | undefined;
  const telemetry = o.listen === 'off' ? undefined : await import('../process/telemetry.js');
  const metrics = telemetry?.createPrometheusMetrics();
  let http: { server: Server; url: string } | undefined;
  if (telemetry !== undefined && metrics !== undefined) {
    // Ready while standing by, and once leading with every Proxy listed.
    http = await telemetry.startHttpServer(
      o.listen,
      metrics,
      () => state === 'standby' || (state === 'leading' && store?.synced === true),
    );
    logger.info({ url: http.url }, 'serving /metrics, /healthz and /readyz');
  }
  // Every replica serves the probe target: the Service in front of them picks any.
  const own = await startOwnTarget(o.probeTarget, logger);
  const lease = leaseNamespace(o.leaseNamespace);
  const elector = o.leaderElect
    ? new LeaderElector({
        client,
        namespace: lease,
        name: o.leaseName,
        identity,
        leaseDurationMs: o.leaseDurationMs,
        renewDeadlineMs: o.renewDeadlineMs,
        retryPeriodMs: o.retryPeriodMs,
        logger,
      })
    : undefined;
  const page = await startPage(
    o.statusListen,
    () => {
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
    logger,
  );
  const finish = async (code: number) => {
    await page?.close();
    await own?.close();
    if (http !== undefined) await new Promise((r) => http?.server.close(r));
    await metrics?.shutdown();
    client.close();
    await tracing?.shutdown();
    logger.info({ exitCode: code }, 'proxy-op stopped');
    return code;
  };
  logger.info(
    {
      server: client.server,
      namespace: o.namespace ?? '(all)',
      identity,
      leaderElection: elector === undefined ? 'off' : `${lease}/${o.leaseName}`,
    },
    'proxy-op running on Kubernetes',
  );
  if (elector !== undefined) {
    state = 'standby';
    try {
      await elector.acquire(stop.signal);
    } catch {
      return finish(0);
    }
  }
  state = 'leading';
  try {
    store = await KubeStore.start({
      client,
      namespace: o.namespace,
      logger,
      identity,
      signal: stop.signal,
    });
  } catch {
    await elector?.release();
    return finish(0);
  }
  let pools: KubePoolStore;
  try {
    pools = await poolsModule.KubePoolStore.start({
      client,
      proxies: store,
      namespace: o.namespace,
      logger,
      signal: stop.signal,
    });
  } catch {
    await store.close();
    await elector?.release();
    return finish(0);
  }
  const providers = new ProviderSet({ logger, meter: metrics?.meter });
  const credentials = new SecretCredentialStore(client);
  const gateways = new KubeGateways({ client, image: o.gatewayImage, logger });
  const { pools: poolController, operator } = buildOperator({
    store,
    pools,
    providers,
    credentials,
    gateways,
    logger,
    meter: metrics?.meter,
    probeTarget: own?.target,
    page,
    opts: o.opts,
  });
  const applied = await operator.applyProviders(await config(read.config));
  for (const p of applied.problems) logger.error({ problem: p }, 'provider could not be built');
  operator.start();
  poolController.start();
  logger.info({ proxies: store.list().length, pools: pools.listPools().length }, 'reconciling');
  const reloader = reloadProvidersOnChange({
    file: read.file,
    since: read.stamp,
    explicit: o.providersFile,
    registry,
    operator,
    logger,
    pollMs: o.providersPollMs,
    build: config,
  });
  const view = startStatusView(store, o.output, operator, page?.url);
  const stopped = new Promise<'signal'>((r) =>
    stop.signal.addEventListener('abort', () => r('signal'), { once: true }),
  );
  const outcome = await Promise.race([
    stopped,
    elector?.lost.then(() => 'lost' as const) ?? new Promise<never>(() => {}),
  ]);
  reloader.stopWatching();
  view.stop();
  // Leadership lost: another replica may lead any moment, so nothing more is done here.
  await poolController.stop();
  await gateways.stop();
  await operator.stop({ graceMs: outcome === 'lost' ? 0 : o.shutdownGraceMs });
  await pools.close();
  await reloader.settled();
  await store.close();
  await providers.close();
  if (outcome === 'lost') return finish(1);
  await elector?.release();
  return finish(0);
}
