/**
 * `proxy-op run` in both modes, and `down`: the flags checked and turned
 * into the operator's options, then the run on Kubernetes
 * (`kube/run.ts`) or over a manifests folder (`standalone/run.ts`).
 *
 * @module
 */
import type { LevelWithSilent } from 'pino';
import { DEFAULTS } from '../defaults.js';
import { runOnKubernetes } from '../kube/run.js';
import type { ProbeTargetOptions } from '../probe/target.js';
import { parseListenAddress } from '../process/listen.js';
import type { OperatorOptions } from '../proxy/controller.js';
import { runStandalone } from '../standalone/run.js';
import { parseDuration, UsageError } from './args.js';
import { parseRunFlags, runHelp } from './flags.js';

const DOWN_HELP = `usage: proxy-op down --standalone DIR [--providers FILE] [--state FILE] [flags]

Deletes every Proxy recorded in the state file (DIR${DEFAULTS.stateFileSuffix}, or --state) and
its proxy, as if DIR were empty, then exits: 0 when the state is empty, 1
otherwise. The manifests in DIR are left alone: the next "run" creates them
again. It takes the providers the same way as "run", and its flags.
`;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Runs `proxy-op run` (or, with `mode` `down`, `proxy-op down`); resolves with the exit code. */
export async function run(argv: string[], mode: 'run' | 'down' = 'run'): Promise<number> {
  const flags = parseRunFlags(argv, mode);
  const value = (name: Parameters<typeof flags.value>[0]): string => {
    const v = flags.value(name);
    if (v === undefined) throw new TypeError(`--${name} has no default`);
    return v;
  };
  const duration = (name: Parameters<typeof flags.value>[0]) => parseDuration(value(name));
  if (flags.is('help')) {
    process.stdout.write(mode === 'down' ? DOWN_HELP : runHelp());
    return 0;
  }
  const standalone = flags.value('standalone');
  if (standalone === undefined && mode === 'down') {
    throw new UsageError(
      'down needs --standalone DIR; on Kubernetes, delete the Proxies with kubectl',
    );
  }
  if (standalone === undefined && flags.is('once')) {
    throw new UsageError('--once needs --standalone DIR');
  }
  const leaderElect = value('leader-elect');
  if (leaderElect !== 'true' && leaderElect !== 'false') {
    throw new UsageError('--leader-elect is true or false');
  }
  const once = flags.is('once') || mode === 'down';
  const count = (name: 'workers' | 'probe-concurrency' | 'failure-threshold') => {
    const n = Number(value(name));
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer`);
    return n;
  };
  const workers = count('workers');
  const outputFlag = value('output');
  const output = outputFlag === 'auto' ? (process.stdout.isTTY ? 'table' : 'json') : outputFlag;
  if (output !== 'table' && output !== 'json')
    throw new UsageError('--output is auto, table or json');
  const level = value('log-level') as LevelWithSilent;
  if (!LEVELS.includes(level)) {
    throw new UsageError(`--log-level ${level} is not a pino level`);
  }
  const opts: OperatorOptions = {
    workers,
    deletionPollMs: duration('deletion-poll'),
    provisioningPollMs: duration('provisioning-poll'),
    readyResyncMs: duration('ready-resync'),
    backoffBaseMs: duration('backoff-base'),
    backoffMaxMs: duration('backoff-max'),
    quotaBackoffBaseMs: duration('quota-backoff-base'),
    quotaBackoffMaxMs: duration('quota-backoff-max'),
    callTimeoutMs: duration('call-timeout'),
    gcIntervalMs: duration('gc-interval'),
    gcMinAgeMs: duration('gc-min-age'),
    gcDryRun: flags.is('gc-dry-run'),
    healthIntervalMs: duration('health-interval'),
    checkTimeoutMs: duration('check-timeout'),
    probeIntervalMs: duration('probe-interval'),
    probes: {
      timeoutMs: duration('probe-timeout'),
      concurrency: count('probe-concurrency'),
      startupTimeoutMs: duration('startup-timeout'),
      failureThreshold: count('failure-threshold'),
      statusRefreshMs: duration('probe-status-refresh'),
    },
  };
  for (const [flag, scheme] of [
    ['probe-url', 'http:'],
    ['probe-tls-url', 'https:'],
  ] as const) {
    const v = flags.value(flag);
    if (v !== undefined && !URL.canParse(v)) throw new UsageError(`--${flag}: "${v}" is not a URL`);
    if (v !== undefined && new URL(v).protocol !== scheme) {
      throw new UsageError(`--${flag}: "${v}" is not an ${scheme} URL`);
    }
  }
  // The operator's own target, unless probing is off or it runs none.
  const probeTarget: ProbeTargetOptions | undefined =
    mode === 'down' || opts.probeIntervalMs === 0 || value('probe-listen') === 'off'
      ? undefined
      : {
          listen: value('probe-listen'),
          tlsListen: value('probe-tls-listen'),
          url: flags.value('probe-url'),
          tlsUrl: flags.value('probe-tls-url'),
        };
  const rescanMs = duration('rescan');
  const providersPollMs = duration('providers-poll');
  const providersFile = flags.value('providers');
  const listen = value('listen');
  const statusListen = value('status-listen');
  if (statusListen !== 'off') {
    try {
      parseListenAddress(statusListen);
    } catch (err) {
      throw new UsageError(`--status-listen: ${(err as Error).message}`);
    }
  }

  if (standalone === undefined) {
    return runOnKubernetes({
      opts,
      level,
      output,
      providersFile,
      providersPollMs,
      listen,
      statusListen,
      kubeconfig: flags.value('kubeconfig'),
      context: flags.value('context'),
      namespace: flags.value('namespace'),
      leaderElect: leaderElect === 'true',
      leaseNamespace: flags.value('leader-election-namespace'),
      leaseName: value('leader-election-id'),
      leaseDurationMs: duration('lease-duration'),
      renewDeadlineMs: duration('renew-deadline'),
      retryPeriodMs: duration('retry-period'),
      shutdownGraceMs: duration('shutdown-grace'),
      requestTimeoutMs: duration('request-timeout'),
      gatewayImage: value('gateway-image'),
      probeTarget,
    });
  }
  return runStandalone({
    mode,
    dir: standalone,
    stateFile: flags.value('state'),
    once,
    opts,
    level,
    output,
    providersFile,
    providersPollMs,
    rescanMs,
    listen,
    statusListen,
    probeTarget,
  });
}
