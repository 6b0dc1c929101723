/**
 * `proxy-op run --standalone DIR` and `proxy-op down`: the operator over a
 * folder of Proxy manifests and the state file beside it, with the metrics
 * endpoints, the live status output and the providers file reloaded on
 * change. `down` runs it over an empty folder, which deletes every Proxy of
 * the state file.
 *
 * @module
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from '@proxy-op/contract';
import type { LevelWithSilent } from 'pino';
import { loadProviders, logDefaultProvider, reloadProvidersOnChange } from '../cli/providers.js';
import { buildOperator, startPage } from '../manager/assemble.js';
import { startStatusView } from '../page/live-table.js';
import { type ProbeTargetOptions, startOwnTarget } from '../probe/target.js';
import { createLogger } from '../process/log.js';
import { startTracing } from '../process/otel.js';
import { credentialsDir, standaloneProviders } from '../providers/default.js';
import { ProviderRegistry } from '../providers/registry.js';
import { ProviderSet } from '../providers/set.js';
import type { OperatorOptions } from '../proxy/controller.js';
import { FileCredentialStore } from './credentials.js';
import { GatewayProcesses } from './gateways.js';
import { defaultStateFile, endpointsDir } from './state-file.js';
import { StandaloneStore } from './store.js';

/** What a standalone run is given by the flags. */
export interface StandaloneRunOptions {
  readonly mode: 'run' | 'down';
  readonly dir: string;
  readonly stateFile: string | undefined;
  /** Exit once every Proxy is settled (always with `down`). */
  readonly once: boolean;
  readonly opts: OperatorOptions;
  readonly level: LevelWithSilent;
  readonly output: 'table' | 'json';
  readonly providersFile: string | undefined;
  readonly providersPollMs: number;
  readonly rescanMs: number;
  readonly listen: string;
  /** Where the status page listens (`off`: no page). */
  readonly statusListen: string;
  /** The operator's own probe target; undefined: none. */
  readonly probeTarget: ProbeTargetOptions | undefined;
}

/**
 * Runs the operator over the manifests folder until SIGINT or SIGTERM (or,
 * with `once`, until every Proxy is settled); resolves with the exit code.
 */
export async function runStandalone(o: StandaloneRunOptions): Promise<number> {
  const { mode, once, opts } = o;
  const tracing = await startTracing();
  const logger: Logger = createLogger({ level: o.level });
  const registry = new ProviderRegistry();
  const stateFile = resolve(o.stateFile ?? defaultStateFile(o.dir));
  const read = await loadProviders(o.providersFile, registry);
  if (read === undefined) return 2;
  const config = await standaloneProviders(read.config, registry, stateFile);
  logDefaultProvider(logger, read, { block: config.providers[0]?.block });
  // `down` reconciles the state file against an empty folder: every Proxy in it is deleted.
  const emptyDir = mode === 'down' ? await mkdtemp(join(tmpdir(), 'proxy-op-down-')) : undefined;
  // The metrics SDK is loaded only when something serves it.
  const telemetry = o.listen === 'off' ? undefined : await import('../process/telemetry.js');
  const metrics = telemetry?.createPrometheusMetrics();
  const providers = new ProviderSet({ logger, meter: metrics?.meter });
  const store = await StandaloneStore.open({
    dir: emptyDir ?? o.dir,
    stateFile,
    rescanMs: o.rescanMs,
    watch: mode === 'run',
    logger,
  }).catch(async (err: unknown) => {
    if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
    throw err;
  });
  const own = await startOwnTarget(o.probeTarget, logger).catch(async (err: unknown) => {
    await store.close();
    if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
    throw err;
  });
  const page = await startPage(
    o.statusListen,
    () => ({ store: 'standalone', state: 'leading', where: resolve(o.dir) }),
    logger,
  );
  const credentials = new FileCredentialStore(credentialsDir(stateFile));
  const gateways = new GatewayProcesses({
    endpointsDir: endpointsDir(stateFile),
    dir: credentialsDir(stateFile),
    logger,
  });
  const { pools, operator } = buildOperator({
    store,
    pools: store.pools,
    providers,
    credentials,
    gateways,
    logger,
    meter: metrics?.meter,
    probeTarget: own?.target,
    page,
    opts,
  });
  const applied = await operator.applyProviders(config);
  for (const p of applied.problems) logger.error({ problem: p }, 'provider could not be built');
  let ready = false;
  let http: { server: Server; url: string } | undefined;
  if (telemetry !== undefined && metrics !== undefined) {
    http = await telemetry.startHttpServer(o.listen, metrics, () => ready);
    logger.info({ url: http.url }, 'serving /metrics, /healthz and /readyz');
  }
  operator.start();
  pools.start();
  ready = true;

  const reloader = reloadProvidersOnChange({
    file: read.file,
    since: read.stamp,
    explicit: o.providersFile,
    registry,
    operator,
    logger,
    pollMs: o.providersPollMs,
    build: (c) => standaloneProviders(c, registry, stateFile),
  });

  const view = startStatusView(store, o.output, operator, page?.url);
  const done = () =>
    mode === 'down'
      ? store.list().length === 0
      : store.list().every((p) => p.status.phase === 'Ready');
  const started = {
    dir: resolve(o.dir),
    stateFile: store.stateFile,
    proxies: store.list().length,
  };
  let settling: ReturnType<typeof setInterval> | undefined;
  const exitCode = await new Promise<number>((finish) => {
    const stop = () => {
      clearInterval(settling);
      // With --once the exit code reports the outcome: a run stopped before
      // everything settled did not finish, whatever stopped it.
      if (once && !(operator.settled() && done())) {
        logger.warn(
          { phases: operator.phases() },
          'stopped before every Proxy settled; exiting with code 1',
        );
        finish(1);
      } else finish(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // Said only now: whoever waits for this line may stop the run with a signal at once.
    logger.info(
      started,
      mode === 'down'
        ? 'proxy-op deleting every Proxy of the state file'
        : 'proxy-op running in standalone mode',
    );
    if (once) {
      settling = setInterval(() => {
        if (operator.settled()) {
          clearInterval(settling);
          finish(done() ? 0 : 1);
        }
      }, 20);
    }
  });
  view.stop();
  reloader.stopWatching();
  if (once && (opts.gcIntervalMs ?? 0) > 0) {
    // One last GC pass, so a run with --once also collects what a crash left behind.
    await operator.runGc();
  }
  await pools.stop();
  await gateways.stop();
  await operator.stop();
  await page?.close();
  await own?.close();
  await reloader.settled();
  await store.close();
  await providers.close();
  if (http !== undefined) await new Promise((r) => http?.server.close(r));
  await metrics?.shutdown();
  if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
  await tracing?.shutdown();
  logger.info({ exitCode }, 'proxy-op stopped');
  return exitCode;
}
