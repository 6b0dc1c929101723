#!/usr/bin/env node
/**
 * The `proxy-op` command: `run` (on Kubernetes, or `--standalone DIR`),
 * `down`, `check`, `validate`, `status`, `crds`. See the package README for
 * every flag and its default.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from '@proxy-op/contract';
import type { LevelWithSilent } from 'pino';
import { crdsYaml } from './crds.js';
import { checkProvider } from './health.js';
import { createLogger } from './log.js';
import { Operator, type OperatorOptions } from './operator.js';
import { startTracing } from './otel.js';
import {
  DEFAULT_PROVIDER,
  defaultProvidersConfig,
  loadProvidersFile,
  ProviderRegistry,
  ProviderSet,
  type ProvidersConfig,
  standaloneProviders,
  watchProvidersFile,
} from './providers.js';
import { defaultStateFile, readStateFile, StandaloneStore } from './standalone.js';
import { age, startStatusView, table } from './view.js';

const USAGE = `usage: proxy-op <command> [flags]

commands:
  run                    reconcile the Proxies of the Kubernetes cluster (kubeconfig or in-cluster)
  run --standalone DIR   reconcile the Proxy manifests in DIR (state in DIR.state.json)
  down --standalone DIR  delete every Proxy of DIR's state file and its proxy, then exit
  check                  run every provider's health check once; exit 1 when a target is not ready
  validate               validate the providers file (and, with --standalone, the manifests)
  status --standalone DIR
                         print the Proxies and their status from the state file
  crds                   print the CustomResourceDefinitions of Proxy and ProviderHealth
  help                   print this text

Run "proxy-op <command> --help" for the command's flags.
`;

const RUN_HELP = `usage: proxy-op run [--standalone DIR] [flags]

Without --standalone the Proxies are those of a Kubernetes cluster.

  --standalone DIR          folder of Proxy manifests instead of a cluster
  --providers FILE          providers file (default providers.yaml when it exists; without one,
                            or when it lists none, the built-in "local" provider)
  --state FILE              state file (standalone; default DIR.state.json, beside DIR)
  --listen HOST:PORT        /metrics, /healthz, /readyz address (default 127.0.0.1:9464; "off" disables)
  --workers N               concurrent reconciles (default 3)
  --deletion-poll D         Get poll of a returns-early deletion (default 5s)
  --provisioning-poll D     poll of a provisioning instance (default 10s)
  --ready-resync D          recheck of a Ready Proxy (default 5m)
  --backoff-base D          first retry after a failure (default 1s)
  --backoff-max D           longest retry delay (default 5m)
  --quota-backoff-base D    first retry after QuotaExceeded (default 1m)
  --quota-backoff-max D     longest retry after QuotaExceeded (default 15m)
  --call-timeout D          deadline of one provider call (default 2m)
  --gc-interval D           GC interval, 0 disables (default 5m)
  --gc-min-age D            GC leaves younger instances alone (default 10m)
  --gc-dry-run              GC only reports
  --health-interval D       health check interval, 0 disables (default 1m)
  --check-timeout D         deadline of one health check round (default 10s)
  --rescan D                manifest folder rescan, besides watching (standalone; default 5s)
  --providers-poll D        providers file change poll (default 2s)
  --output auto|table|json  status output on stdout (default auto: table on a TTY, JSON lines otherwise)
  --log-level LEVEL         trace, debug, info, warn, error, silent (default info; logs go to stderr)
  --once                    (standalone) exit when every Proxy is settled (after one GC pass when
                            GC is on): 0 when all are Ready, 1 otherwise (also when SIGINT or
                            SIGTERM stops it before that)

On Kubernetes:
  --kubeconfig FILE         kubeconfig (default $KUBECONFIG, ~/.kube/config, else in-cluster)
  --context NAME            kubeconfig context (default its current context)
  --namespace NS            reconcile the Proxies of NS only (default every namespace)
  --leader-elect BOOL       take part in leader election (default true)
  --leader-election-namespace NS
                            the Lease's namespace (default $POD_NAMESPACE, the service
                            account's namespace, else proxy-op-system)
  --leader-election-id NAME the Lease's name (default proxy-op)
  --lease-duration D        how long a Lease holds without renewal (default 15s)
  --renew-deadline D        the leader stops leading when it could not renew for this long (default 10s)
  --retry-period D          how often the Lease is tried and renewed (default 2s)
  --shutdown-grace D        on SIGTERM, how long reconciles in flight may finish (default 20s)
  --request-timeout D       deadline of one API request (default 30s)

Durations: 500ms, 10s, 5m, 1h (or 0).
`;

const DOWN_HELP = `usage: proxy-op down --standalone DIR [--providers FILE] [--state FILE] [flags]

Deletes every Proxy recorded in the state file (DIR.state.json, or --state) and
its proxy, as if DIR were empty, then exits: 0 when the state is empty, 1
otherwise. The manifests in DIR are left alone: the next "run" creates them
again. It takes the providers the same way as "run", and its flags.
`;

/** Parses a duration (`500ms`, `10s`, `5m`, `1h`, `0`) into milliseconds. */
export function parseDuration(s: string): number {
  if (s === '0') return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(s.trim());
  if (m === null) throw new UsageError(`"${s}" is not a duration (500ms, 10s, 5m, 1h)`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Math.round(n * unit);
}

class UsageError extends Error {}

const DEFAULT_PROVIDERS_FILE = 'providers.yaml';

/** The providers file's outcome: its config (undefined when there is no file), or invalid. */
type ProvidersRead =
  | { readonly ok: true; readonly file: string; readonly config: ProvidersConfig | undefined }
  | { readonly ok: false; readonly file: string; readonly problems: readonly string[] };

/**
 * Reads the providers file: `--providers FILE` must exist; without the flag,
 * `providers.yaml` in the current folder is read when it exists, and its
 * absence means "no file" (the built-in `local` provider then applies).
 */
async function readProviders(
  explicit: string | undefined,
  registry: ProviderRegistry,
): Promise<ProvidersRead> {
  const file = explicit ?? DEFAULT_PROVIDERS_FILE;
  if (explicit === undefined && !existsSync(file)) return { ok: true, file, config: undefined };
  const load = await loadProvidersFile(file, registry);
  return load.ok
    ? { ok: true, file, config: load.config }
    : { ok: false, file, problems: load.problems };
}

/**
 * Watches the providers file and applies each valid version to the operator,
 * one reload at a time; an invalid version is logged and the providers in
 * use are kept. `settled` resolves once the reloads begun have finished.
 */
function reloadProvidersOnChange(o: {
  file: string;
  explicit: string | undefined;
  registry: ProviderRegistry;
  operator: Operator;
  logger: Logger;
  pollMs: number | undefined;
  build: (config: ProvidersConfig | undefined) => Promise<ProvidersConfig>;
}): { stopWatching(): void; settled(): Promise<void> } {
  let reloading = Promise.resolve();
  const stopWatching = watchProvidersFile(
    o.file,
    () => {
      reloading = reloading.then(async () => {
        const again = await readProviders(o.explicit, o.registry);
        if (!again.ok) {
          o.logger.error(
            { problems: again.problems },
            'providers file is invalid; keeping the old one',
          );
          return;
        }
        await o.operator
          .applyProviders(await o.build(again.config))
          .catch((err: unknown) =>
            o.logger.error({ err: (err as Error).message }, 'applying the providers file failed'),
          );
      });
    },
    o.pollMs,
  );
  return { stopWatching, settled: () => reloading };
}

async function loadProviders(explicit: string | undefined, registry: ProviderRegistry) {
  const read = await readProviders(explicit, registry);
  if (!read.ok) {
    process.stderr.write(`${read.file}: invalid providers file:\n`);
    for (const p of read.problems) process.stderr.write(`  ${p}\n`);
    return undefined;
  }
  return read;
}

async function cmdValidate(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      providers: { type: 'string' },
      standalone: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: proxy-op validate [--providers FILE] [--standalone DIR]\n\nPrints every problem with its path; exits 1 when there is one.\n',
    );
    return 0;
  }
  let bad = false;
  const read = await loadProviders(values.providers, new ProviderRegistry());
  if (read === undefined) bad = true;
  else if (read.config === undefined) {
    process.stdout.write(
      `no ${read.file}: the built-in "${DEFAULT_PROVIDER}" provider (installation default)\n`,
    );
  } else {
    const { installation, providers } = read.config;
    process.stdout.write(
      `${read.file}: ok (installation ${installation}, ${providers.length} providers${providers.length === 0 ? `; the built-in "${DEFAULT_PROVIDER}" provider applies` : ''})\n`,
    );
  }
  if (values.standalone !== undefined) {
    const { validateManifestsDir } = await import('./manifests.js');
    const { count, problems } = await validateManifestsDir(values.standalone);
    if (problems.length > 0) {
      bad = true;
      process.stderr.write(`${values.standalone}: invalid manifests:\n`);
      for (const p of problems) process.stderr.write(`  ${p}\n`);
    } else process.stdout.write(`${values.standalone}: ok (${count} Proxies)\n`);
  }
  return bad ? 1 : 0;
}

async function cmdCheck(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      providers: { type: 'string' },
      timeout: { type: 'string', default: '10s' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: proxy-op check [--providers FILE] [--timeout 10s] [--json]\n\nRuns every Checker once and prints a table; exits 1 when a target is not ready.\n',
    );
    return 0;
  }
  const timeout = parseDuration(values.timeout);
  const registry = new ProviderRegistry();
  const read = await loadProviders(values.providers, registry);
  if (read === undefined) return 2;
  const config =
    read.config !== undefined && read.config.providers.length > 0
      ? read.config
      : await defaultProvidersConfig(registry, read.config?.installation);
  const set = new ProviderSet();
  const applied = await set.apply(config);
  for (const p of applied.problems) process.stderr.write(`${p}\n`);
  const rows: string[][] = [['PROVIDER', 'TYPE', 'TARGET', 'READY', 'REASON', 'MESSAGE']];
  const json: unknown[] = [];
  let allReady = applied.problems.length === 0;
  const results = await Promise.all(
    set.list().map(async (cp) => ({ cp, results: await checkProvider(cp, timeout) })),
  );
  for (const { cp, results: rs } of results) {
    if (rs === undefined) {
      rows.push([cp.name, cp.type, '-', '-', 'NoChecker', 'the provider has no health check']);
      continue;
    }
    for (const r of rs) {
      if (!r.ready) allReady = false;
      rows.push([cp.name, cp.type, r.target, r.ready ? 'yes' : 'no', r.reason, r.message]);
      json.push({ provider: cp.name, type: cp.type, ...r });
    }
  }
  await set.close();
  process.stdout.write(
    values.json ? `${json.map((j) => JSON.stringify(j)).join('\n')}\n` : `${table(rows)}\n`,
  );
  return allReady ? 0 : 1;
}

async function cmdStatus(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      standalone: { type: 'string' },
      state: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || values.standalone === undefined) {
    process.stdout.write(
      'usage: proxy-op status --standalone DIR [--state FILE] [--json]\n\nPrints the Proxies and ProviderHealth recorded in the state file.\n',
    );
    return values.help ? 0 : 2;
  }
  const state = await readStateFile(values.state ?? defaultStateFile(values.standalone));
  const keys = Object.keys(state.proxies).sort();
  if (values.json) {
    for (const key of keys) {
      const e = state.proxies[key];
      if (e === undefined) continue;
      process.stdout.write(
        `${JSON.stringify({ proxy: key, uid: e.uid, deleting: e.deletionTimestamp !== undefined, spec: e.spec, status: e.status })}\n`,
      );
    }
    return 0;
  }
  const now = Date.now();
  const rows: string[][] = [['NAMESPACE', 'NAME', 'PROVIDER', 'PHASE', 'ENDPOINT', 'AGE']];
  for (const key of keys) {
    const e = state.proxies[key];
    if (e === undefined) continue;
    const i = key.indexOf('/');
    rows.push([
      key.slice(0, i),
      key.slice(i + 1),
      e.spec.provider,
      e.deletionTimestamp !== undefined ? 'Deleting' : (e.status.phase ?? 'Pending'),
      e.status.endpoint ?? '',
      age(e.creationTimestamp, now),
    ]);
  }
  process.stdout.write(`${table(rows)}\n`);
  const health = Object.entries(state.health);
  if (health.length > 0) {
    const hr: string[][] = [['PROVIDER', 'TYPE', 'READY', 'TARGETS']];
    for (const [name, h] of health) {
      hr.push([
        name,
        h.type,
        h.ready ? 'yes' : 'no',
        h.targets.map((t) => `${t.target}:${t.reason}`).join(' '),
      ]);
    }
    process.stdout.write(`\n${table(hr)}\n`);
  }
  return 0;
}

async function cmdRun(argv: string[], mode: 'run' | 'down' = 'run'): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      standalone: { type: 'string' },
      providers: { type: 'string' },
      state: { type: 'string' },
      listen: { type: 'string', default: mode === 'down' ? 'off' : '127.0.0.1:9464' },
      workers: { type: 'string', default: '3' },
      'deletion-poll': { type: 'string', default: '5s' },
      'provisioning-poll': { type: 'string', default: '10s' },
      'ready-resync': { type: 'string', default: '5m' },
      'backoff-base': { type: 'string', default: '1s' },
      'backoff-max': { type: 'string', default: '5m' },
      'quota-backoff-base': { type: 'string', default: '1m' },
      'quota-backoff-max': { type: 'string', default: '15m' },
      'call-timeout': { type: 'string', default: '2m' },
      'gc-interval': { type: 'string', default: '5m' },
      'gc-min-age': { type: 'string', default: '10m' },
      'gc-dry-run': { type: 'boolean', default: false },
      'health-interval': { type: 'string', default: '1m' },
      'check-timeout': { type: 'string', default: '10s' },
      rescan: { type: 'string', default: '5s' },
      'providers-poll': { type: 'string', default: '2s' },
      output: { type: 'string', default: 'auto' },
      'log-level': { type: 'string', default: 'info' },
      once: { type: 'boolean', default: false },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect': { type: 'string', default: 'true' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string', default: 'proxy-op' },
      'lease-duration': { type: 'string', default: '15s' },
      'renew-deadline': { type: 'string', default: '10s' },
      'retry-period': { type: 'string', default: '2s' },
      'shutdown-grace': { type: 'string', default: '20s' },
      'request-timeout': { type: 'string', default: '30s' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(mode === 'down' ? DOWN_HELP : RUN_HELP);
    return 0;
  }
  if (values.standalone === undefined && mode === 'down') {
    throw new UsageError(
      'down needs --standalone DIR; on Kubernetes, delete the Proxies with kubectl',
    );
  }
  if (values.standalone === undefined && values.once) {
    throw new UsageError('--once needs --standalone DIR');
  }
  if (values['leader-elect'] !== 'true' && values['leader-elect'] !== 'false') {
    throw new UsageError('--leader-elect is true or false');
  }
  const once = values.once || mode === 'down';
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1) {
    throw new UsageError('--workers must be a positive integer');
  }
  const output =
    values.output === 'auto' ? (process.stdout.isTTY ? 'table' : 'json') : values.output;
  if (output !== 'table' && output !== 'json')
    throw new UsageError('--output is auto, table or json');
  const level = values['log-level'] as LevelWithSilent;
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(level)) {
    throw new UsageError(`--log-level ${level} is not a pino level`);
  }
  const opts: OperatorOptions = {
    workers,
    deletionPollMs: parseDuration(values['deletion-poll']),
    provisioningPollMs: parseDuration(values['provisioning-poll']),
    readyResyncMs: parseDuration(values['ready-resync']),
    backoffBaseMs: parseDuration(values['backoff-base']),
    backoffMaxMs: parseDuration(values['backoff-max']),
    quotaBackoffBaseMs: parseDuration(values['quota-backoff-base']),
    quotaBackoffMaxMs: parseDuration(values['quota-backoff-max']),
    callTimeoutMs: parseDuration(values['call-timeout']),
    gcIntervalMs: parseDuration(values['gc-interval']),
    gcMinAgeMs: parseDuration(values['gc-min-age']),
    gcDryRun: values['gc-dry-run'],
    healthIntervalMs: parseDuration(values['health-interval']),
    checkTimeoutMs: parseDuration(values['check-timeout']),
  };
  const rescanMs = parseDuration(values.rescan);
  const providersPollMs = parseDuration(values['providers-poll']);

  if (values.standalone === undefined) {
    return runOnKubernetes({
      opts,
      level,
      output,
      providersFile: values.providers,
      providersPollMs,
      listen: values.listen,
      kubeconfig: values.kubeconfig,
      context: values.context,
      namespace: values.namespace,
      leaderElect: values['leader-elect'] === 'true',
      leaseNamespace: values['leader-election-namespace'],
      leaseName: values['leader-election-id'],
      leaseDurationMs: parseDuration(values['lease-duration']),
      renewDeadlineMs: parseDuration(values['renew-deadline']),
      retryPeriodMs: parseDuration(values['retry-period']),
      shutdownGraceMs: parseDuration(values['shutdown-grace']),
      requestTimeoutMs: parseDuration(values['request-timeout']),
    });
  }
  const tracing = await startTracing();
  const logger: Logger = createLogger({ level });
  const registry = new ProviderRegistry();
  const stateFile = resolve(values.state ?? defaultStateFile(values.standalone));
  const read = await loadProviders(values.providers, registry);
  if (read === undefined) return 2;
  const config = await standaloneProviders(read.config, registry, stateFile);
  if (read.config === undefined || read.config.providers.length === 0) {
    logger.info(
      { provider: DEFAULT_PROVIDER, block: config.providers[0]?.block },
      `${read.config === undefined ? `no providers file (${read.file})` : `${read.file} lists no provider`}: using the built-in "${DEFAULT_PROVIDER}" provider`,
    );
  }
  // `down` reconciles the state file against an empty folder: every Proxy in it is deleted.
  const emptyDir = mode === 'down' ? await mkdtemp(join(tmpdir(), 'proxy-op-down-')) : undefined;
  // The metrics SDK is loaded only when something serves it.
  const telemetry = values.listen === 'off' ? undefined : await import('./telemetry.js');
  const metrics = telemetry?.createPrometheusMetrics();
  const providers = new ProviderSet({ logger, meter: metrics?.meter });
  const store = await StandaloneStore.open({
    dir: emptyDir ?? values.standalone,
    stateFile,
    rescanMs,
    watch: mode === 'run',
    logger,
  }).catch(async (err: unknown) => {
    if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
    throw err;
  });
  const operator = new Operator({ store, providers, logger, meter: metrics?.meter }, opts);
  const applied = await operator.applyProviders(config);
  for (const p of applied.problems) logger.error({ problem: p }, 'provider could not be built');
  let ready = false;
  let http: { server: import('node:http').Server; url: string } | undefined;
  if (telemetry !== undefined && metrics !== undefined) {
    http = await telemetry.startHttpServer(values.listen, metrics, () => ready);
    logger.info({ url: http.url }, 'serving /metrics, /healthz and /readyz');
  }
  operator.start();
  ready = true;

  const reloader = reloadProvidersOnChange({
    file: read.file,
    explicit: values.providers,
    registry,
    operator,
    logger,
    pollMs: providersPollMs,
    build: (c) => standaloneProviders(c, registry, stateFile),
  });

  const view = startStatusView(store, output, operator);
  const done = () =>
    mode === 'down'
      ? store.list().length === 0
      : store.list().every((p) => p.status.phase === 'Ready');
  const started = {
    dir: resolve(values.standalone),
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
  await operator.stop();
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

/** What `run` on Kubernetes is given by the flags. */
interface KubeRunOptions {
  readonly opts: OperatorOptions;
  readonly level: LevelWithSilent;
  readonly output: 'table' | 'json';
  readonly providersFile: string | undefined;
  readonly providersPollMs: number;
  readonly listen: string;
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
  return 'proxy-op-system';
}

/**
 * `proxy-op run` on Kubernetes: waits for the Lease (unless leader election
 * is off), then starts the informer and the operator. SIGTERM or SIGINT
 * lets the reconciles in flight finish within the shutdown grace, stops, and
 * releases the Lease; losing the Lease stops at once with exit code 1.
 */
async function runOnKubernetes(o: KubeRunOptions): Promise<number> {
  const tracing = await startTracing();
  const logger: Logger = createLogger({ level: o.level });
  const registry = new ProviderRegistry();
  const read = await loadProviders(o.providersFile, registry);
  if (read === undefined) return 2;
  const { KubeClient } = await import('./kube/client.js');
  const { KubeStore } = await import('./kube/store.js');
  const { LeaderElector } = await import('./kube/leader.js');
  let client: import('./kube/client.js').KubeClient;
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
  if (read.config === undefined || read.config.providers.length === 0) {
    logger.info(
      { provider: DEFAULT_PROVIDER },
      `${read.config === undefined ? `no providers file (${read.file})` : `${read.file} lists no provider`}: using the built-in "${DEFAULT_PROVIDER}" provider`,
    );
  }
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    logger.info({ signal: sig }, 'stopping');
    stop.abort(new Error(`stopped by ${sig}`));
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));

  let state: 'starting' | 'standby' | 'leading' = 'starting';
  let store: import('./kube/store.js').KubeStore | undefined;
  const telemetry = o.listen === 'off' ? undefined : await import('./telemetry.js');
  const metrics = telemetry?.createPrometheusMetrics();
  let http: { server: import('node:http').Server; url: string } | undefined;
  if (telemetry !== undefined && metrics !== undefined) {
    // Ready while standing by, and once leading with every Proxy listed.
    http = await telemetry.startHttpServer(
      o.listen,
      metrics,
      () => state === 'standby' || (state === 'leading' && store?.synced === true),
    );
    logger.info({ url: http.url }, 'serving /metrics, /healthz and /readyz');
  }
  const elector = o.leaderElect
    ? new LeaderElector({
        client,
        namespace: leaseNamespace(o.leaseNamespace),
        name: o.leaseName,
        identity,
        leaseDurationMs: o.leaseDurationMs,
        renewDeadlineMs: o.renewDeadlineMs,
        retryPeriodMs: o.retryPeriodMs,
        logger,
      })
    : undefined;
  const finish = async (code: number) => {
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
      leaderElection:
        elector === undefined ? 'off' : `${leaseNamespace(o.leaseNamespace)}/${o.leaseName}`,
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
  const providers = new ProviderSet({ logger, meter: metrics?.meter });
  const operator = new Operator({ store, providers, logger, meter: metrics?.meter }, o.opts);
  const applied = await operator.applyProviders(await config(read.config));
  for (const p of applied.problems) logger.error({ problem: p }, 'provider could not be built');
  operator.start();
  logger.info({ proxies: store.list().length }, 'reconciling');
  const reloader = reloadProvidersOnChange({
    file: read.file,
    explicit: o.providersFile,
    registry,
    operator,
    logger,
    pollMs: o.providersPollMs,
    build: config,
  });
  const view = startStatusView(store, o.output, operator);
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
  await operator.stop({ graceMs: outcome === 'lost' ? 0 : o.shutdownGraceMs });
  await reloader.settled();
  await store.close();
  await providers.close();
  if (outcome === 'lost') return finish(1);
  await elector?.release();
  return finish(0);
}

/** Runs the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await cmdRun(rest);
      case 'down':
        return await cmdRun(rest, 'down');
      case 'check':
        return await cmdCheck(rest);
      case 'validate':
        return await cmdValidate(rest);
      case 'status':
        return await cmdStatus(rest);
      case 'crds':
        process.stdout.write(crdsYaml());
        return 0;
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE);
        return 0;
      default:
        process.stderr.write(
          command === undefined ? USAGE : `unknown command "${command}"\n\n${USAGE}`,
        );
        return 2;
    }
  } catch (err) {
    if (
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`proxy-op ${command}: ${(err as Error).message}\n`);
      return 2;
    }
    process.stderr.write(`proxy-op ${command}: ${(err as Error).message}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
if (code !== 0 || process.argv[2] === 'run') {
  // Timers of providers or watchers must not keep a finished command alive.
  setTimeout(() => process.exit(code), 50).unref();
}
