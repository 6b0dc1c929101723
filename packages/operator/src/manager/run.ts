/**
 * `proxy-op run`, the process around the operator, the same in both run
 * modes: logs, traces and metrics, the operator's own probe target, the
 * status page, the providers file (applied, then followed), the live
 * table, and a stop in order on SIGINT or SIGTERM. The mode (a folder of
 * manifests, or a cluster) is a {@link RunBackend}: it only chooses the
 * stores, says when the operator may run (a Lease), and what the page's
 * header shows.
 *
 * @module
 */
import type { Server } from 'node:http';
import type { Logger } from '@proxy-op/contract';
import type { LevelWithSilent } from 'pino';
import type { Settings } from '../defaults.js';
import { startStatusView } from '../page/live-table.js';
import type { StatusPage } from '../page/server.js';
import type { PageRole } from '../page/wire.js';
import type { PoolGateways } from '../pool/gateway.js';
import { type ProbeTargetOptions, startOwnTarget, type TargetPorts } from '../probe/target.js';
import { createLogger } from '../process/log.js';
import { startTracing } from '../process/otel.js';
import type { ProvidersConfig } from '../providers/file.js';
import { loadProviders, type ProvidersRead } from '../providers/read.js';
import { ProviderRegistry } from '../providers/registry.js';
import { ProviderSet } from '../providers/set.js';
import type { CredentialStore } from '../store/credentials.js';
import type { PoolStore } from '../store/pools.js';
import type { ProxyStore } from '../store/proxies.js';
import { Operator } from './operator.js';
import { startPage } from './page.js';
import { reloadProvidersOnChange } from './reload.js';

/** What `run` is given: every setting, and the flags that name places rather than values. */
export interface RunOptions extends Settings {
  /** `--providers FILE`; `providers.yaml` when it exists if unset. */
  readonly providers?: string | undefined;
  /** `--probe-url`: the URL the probes send through each proxy, instead of the own target's. */
  readonly probeUrl?: string | undefined;
  /** `--probe-tls-url`: the same for the CONNECT probe. */
  readonly probeTlsUrl?: string | undefined;
  /** `--output` resolved: `table` or `json`. */
  readonly output: 'table' | 'json';
  /** `--log-level`. */
  readonly logLevel: LevelWithSilent;
}

/** The stores a mode runs the operator over. */
export interface RunStores {
  readonly store: ProxyStore;
  readonly pools: PoolStore;
  readonly credentials: CredentialStore;
  readonly gateways: PoolGateways;
}

/** What the shared run gives a mode when it builds its backend. */
export interface RunContext {
  readonly logger: Logger;
  readonly registry: ProviderRegistry;
  /** The providers file as read at start. */
  readonly read: Extract<ProvidersRead, { ok: true }>;
}

/** A run mode: the stores, when the operator may run, and how it looks. */
export interface RunBackend {
  /** What the status page's header says now. */
  role(page: StatusPage | undefined): PageRole;
  /** The providers to apply for the file's config (undefined: no file): the mode's default when it lists none. */
  providers(config: ProvidersConfig | undefined): Promise<ProvidersConfig>;
  /** Called once the signals are handled, before the stores are opened. */
  starting?(): void;
  /** Waits until the operator may run here, then opens the stores; undefined when stopped first. */
  open(signal: AbortSignal): Promise<RunStores | undefined>;
  /** Called once the operator runs. */
  started?(stores: RunStores): void;
  /** Where the own probe target's ports are kept between runs (standalone); none: new ones each run. */
  readonly targetPorts?: TargetPorts | undefined;
  /** Whether `/readyz` answers ready. */
  ready(): boolean;
  /** Whether a stop by signal gives the reconciles in flight `shutdownGraceMs` to finish. */
  readonly graceful: boolean;
  /** Resolves when the operator must stop at once (the Lease was lost). */
  readonly lost?: Promise<unknown> | undefined;
  /** With `--once`: whether the run's outcome is a success once every Proxy is settled. */
  done?(stores: RunStores): boolean;
  /** Closes the stores, and gives up what `open` took unless the run ended with `lost`. */
  close(outcome: 'stopped' | 'lost' | 'finished'): Promise<void>;
  /** Closes what the backend holds from its start (a client); after `close`, or without `open`. */
  dispose?(): Promise<void> | void;
}

/** The own probe target the settings ask for; undefined when probing is off or it is `off`. */
function probeTargetOf(o: RunOptions): ProbeTargetOptions | undefined {
  if (o.probeIntervalMs === 0 || o.probeListen === 'off') return undefined;
  return {
    listen: o.probeListen,
    tlsListen: o.probeTlsListen,
    url: o.probeUrl,
    tlsUrl: o.probeTlsUrl,
  };
}

/**
 * Runs the operator until SIGINT or SIGTERM (or the Lease is lost, or,
 * with `once`, every Proxy is settled); resolves with the exit code: 0, 1
 * for a lost Lease or a `once` run that did not succeed, 2 for an invalid
 * providers file.
 */
export async function runOperator(
  o: RunOptions & { readonly once?: boolean | undefined },
  backendOf: (ctx: RunContext) => Promise<RunBackend>,
): Promise<number> {
  const tracing = await startTracing();
  const logger: Logger = createLogger({ level: o.logLevel });
  const registry = new ProviderRegistry();
  const read = await loadProviders(o.providers, registry);
  if (read === undefined) return 2;
  const backend = await backendOf({ logger, registry, read });
  const stop = new AbortController();
  const onSignal = (signal: string) => {
    logger.info({ signal }, 'stopping');
    stop.abort(new Error(`stopped by ${signal}`));
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));

  // The metrics SDK is loaded only when something serves it.
  const telemetry = o.listen === 'off' ? undefined : await import('../process/telemetry.js');
  const metrics = telemetry?.createPrometheusMetrics();
  let http: { server: Server; url: string } | undefined;
  if (telemetry !== undefined && metrics !== undefined) {
    http = await telemetry.startHttpServer(o.listen, metrics, () => backend.ready());
    logger.info({ url: http.url }, 'serving /metrics, /healthz and /readyz');
  }
  const own = await startOwnTarget(probeTargetOf(o), logger, backend.targetPorts);
  let page: StatusPage | undefined;
  page = await startPage(o, () => backend.role(page), logger);
  const finish = async (code: number) => {
    await page?.close();
    await own?.close();
    if (http !== undefined) await new Promise((r) => http?.server.close(r));
    await metrics?.shutdown();
    await backend.dispose?.();
    await tracing?.shutdown();
    logger.info({ exitCode: code }, 'proxy-op stopped');
    return code;
  };
  backend.starting?.();
  const stores = await backend.open(stop.signal).catch(async (err: unknown) => {
    await finish(1);
    throw err;
  });
  if (stores === undefined) return finish(0);

  const providers = new ProviderSet({ logger, meter: metrics?.meter });
  const operator = new Operator({
    ...stores,
    providers,
    settings: o,
    probeTarget: own?.target,
    page,
    logger,
    meter: metrics?.meter,
  });
  const applied = await operator.applyProviders(await backend.providers(read.config));
  for (const p of applied.problems) logger.error({ problem: p }, 'provider could not be built');
  operator.start();
  const reloader = reloadProvidersOnChange({
    file: read.file,
    since: read.stamp,
    explicit: o.providers,
    registry,
    operator,
    logger,
    pollMs: o.providersPollMs,
    build: (c) => backend.providers(c),
  });
  const view = startStatusView(stores.store, o.output, operator, page?.url);
  backend.started?.(stores);

  const outcome = await new Promise<'stopped' | 'lost' | 'finished'>((resolve) => {
    stop.signal.addEventListener('abort', () => resolve('stopped'), { once: true });
    if (stop.signal.aborted) resolve('stopped');
    backend.lost?.then(() => resolve('lost'));
    if (o.once === true) {
      const settling = setInterval(() => {
        if (!operator.settled()) return;
        clearInterval(settling);
        resolve('finished');
      }, 20);
      stop.signal.addEventListener('abort', () => clearInterval(settling), { once: true });
    }
  });
  // With --once the exit code reports the outcome: a run stopped before everything settled
  // did not finish, whatever stopped it.
  let code = outcome === 'lost' ? 1 : 0;
  if (o.once === true) {
    const ok = outcome === 'finished' && backend.done?.(stores) !== false;
    if (outcome !== 'finished') {
      logger.warn(
        { phases: operator.phases() },
        'stopped before every Proxy settled; exiting with code 1',
      );
    }
    code = ok ? 0 : 1;
  }
  view.stop();
  reloader.stopWatching();
  if (o.once === true && o.gcIntervalMs > 0) {
    // One last GC pass, so a run with --once also collects what a crash left behind.
    await operator.runGc();
  }
  // Leadership lost: another replica may lead any moment, so nothing more is done here.
  await operator.stop({
    graceMs: outcome === 'stopped' && backend.graceful ? o.shutdownGraceMs : 0,
  });
  await reloader.settled();
  await backend.close(outcome);
  await providers.close();
  return finish(code);
}
