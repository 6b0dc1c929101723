#!/usr/bin/env node
/**
 * The `proxy-op` command: `run --standalone DIR`, `check`, `validate`,
 * `status`. See the package README for every flag and its default.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from '@proxy-op/contract';
import type { LevelWithSilent } from 'pino';
import { checkProvider } from './health.js';
import { createLogger } from './log.js';
import { Operator, type OperatorOptions } from './operator.js';
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

const USAGE = `usage: proxy-op <command> [flags]

commands:
  run --standalone DIR   reconcile the Proxy manifests in DIR (state in DIR.state.json)
  down --standalone DIR  delete every Proxy of DIR's state file and its proxy, then exit
  check                  run every provider's health check once; exit 1 when a target is not ready
  validate               validate the providers file (and, with --standalone, the manifests)
  status --standalone DIR
                         print the Proxies and their status from the state file
  help                   print this text

Run "proxy-op <command> --help" for the command's flags.
`;

const RUN_HELP = `usage: proxy-op run --standalone DIR [flags]

  --standalone DIR          folder of Proxy manifests (required: the Kubernetes store comes later)
  --providers FILE          providers file (default providers.yaml when it exists; without one,
                            or when it lists none, the built-in "local" provider)
  --state FILE              state file (default DIR.state.json, beside DIR)
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
  --rescan D                manifest folder rescan, besides watching (default 5s)
  --providers-poll D        providers file change poll (default 2s)
  --output auto|table|json  status output on stdout (default auto: table on a TTY, JSON lines otherwise)
  --log-level LEVEL         trace, debug, info, warn, error, silent (default info; logs go to stderr)
  --once                    exit when every Proxy is settled (after one GC pass when GC is on):
                            0 when all are Ready, 1 otherwise (also when SIGINT or SIGTERM
                            stops it before that)

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

function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function age(from: string, now: number): string {
  const s = Math.max(0, Math.floor((now - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

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
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(mode === 'down' ? DOWN_HELP : RUN_HELP);
    return 0;
  }
  if (values.standalone === undefined) {
    throw new UsageError(
      `${mode} needs --standalone DIR: the Kubernetes store is not part of this release yet`,
    );
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

  let reloading = Promise.resolve();
  const stopWatch = watchProvidersFile(
    read.file,
    () => {
      reloading = reloading.then(async () => {
        const again = await readProviders(values.providers, registry);
        if (!again.ok) {
          logger.error(
            { problems: again.problems },
            'providers file is invalid; keeping the old one',
          );
          return;
        }
        await operator.applyProviders(await standaloneProviders(again.config, registry, stateFile));
      });
    },
    providersPollMs,
  );

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
  stopWatch();
  if (once && (opts.gcIntervalMs ?? 0) > 0) {
    // One last GC pass, so a run with --once also collects what a crash left behind.
    await operator.runGc();
  }
  await operator.stop();
  await reloading;
  await store.close();
  await providers.close();
  if (http !== undefined) await new Promise((r) => http?.server.close(r));
  await metrics?.shutdown();
  if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
  logger.info({ exitCode }, 'proxy-op stopped');
  return exitCode;
}

function startStatusView(
  store: StandaloneStore,
  output: 'table' | 'json',
  operator: Operator,
): { stop(): void } {
  const last = new Map<string, string>();
  const render = () => {
    if (output === 'json') {
      const seen = new Set<string>();
      for (const p of store.list()) {
        const key = `${p.metadata.namespace}/${p.metadata.name}`;
        seen.add(key);
        const line = {
          proxy: key,
          phase: p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
          provider: p.spec.provider,
          endpoint: p.status.endpoint,
          providerID: p.status.providerID,
          error: p.status.lastError,
        };
        const text = JSON.stringify(line);
        if (last.get(key) !== text) {
          last.set(key, text);
          process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
        }
      }
      for (const key of [...last.keys()]) {
        if (!seen.has(key)) {
          last.delete(key);
          process.stdout.write(
            `${JSON.stringify({ time: new Date().toISOString(), proxy: key, phase: 'Deleted' })}\n`,
          );
        }
      }
      return;
    }
    const now = Date.now();
    const rows: string[][] = [
      ['NAMESPACE', 'NAME', 'PROVIDER', 'PHASE', 'ENDPOINT', 'AGE', 'ERROR'],
    ];
    for (const p of store.list().sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
      rows.push([
        p.metadata.namespace,
        p.metadata.name,
        p.spec.provider,
        p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
        p.status.endpoint ?? '',
        age(p.metadata.creationTimestamp, now),
        p.status.lastError ? `${p.status.lastError.class}: ${p.status.lastError.message}` : '',
      ]);
    }
    const phases = Object.entries(operator.phases())
      .filter(([, n]) => n > 0)
      .map(([ph, n]) => `${ph} ${n}`)
      .join(', ');
    process.stdout.write(`\x1b[H\x1b[2J${table(rows)}\n\n${phases || 'no Proxies'}\n`);
  };
  render();
  const t = setInterval(render, output === 'json' ? 100 : 1000);
  return {
    stop() {
      clearInterval(t);
      render();
    },
  };
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
