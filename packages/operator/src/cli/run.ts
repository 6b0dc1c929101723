/**
 * `proxy-op run` in both modes, and `down`: the flags read once into the
 * operator's settings (each flag's default applied here, from the flag
 * table, and nowhere below), then the shared run over the standalone or
 * the Kubernetes backend.
 *
 * @module
 */
import type { LevelWithSilent } from 'pino';
import { DEFAULTS, type Settings } from '../defaults.js';
import { type RunOptions, runOperator } from '../manager/run.js';
import { parseListenAddress } from '../process/listen.js';
import { standaloneBackend } from '../standalone/backend.js';
import { parseDuration, UsageError } from './args.js';
import { parseRunFlags, RUN_FLAGS, type RunFlag, type RunFlagValues, runHelp } from './flags.js';

const DOWN_HELP = `usage: proxy-op down --standalone DIR [--providers FILE] [--state FILE] [flags]

Deletes every Proxy recorded in the state file (DIR${DEFAULTS.stateFileSuffix}, or --state) and
its proxy, as if DIR were empty, then exits: 0 when the state is empty, 1
otherwise. The manifests in DIR are left alone: the next "run" creates them
again. It takes the providers the same way as "run", and its flags.
`;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** The counts among the settings: positive integers. */
const COUNTS = new Set<keyof Settings>(['workers', 'probeConcurrency', 'failureThreshold']);

/**
 * Every setting from the flags: each flag with a default in `DEFAULTS`
 * sets the setting of that name (a duration for one ending in `Ms`), the
 * boolean `--gc-dry-run` sets `gcDryRun`, and the settings no flag sets
 * keep their defaults.
 */
function settingsOf(flags: RunFlagValues): Settings {
  const out: Record<string, unknown> = { ...DEFAULTS };
  for (const f of RUN_FLAGS as readonly RunFlag[]) {
    const key = f.defaultKey;
    if (key === undefined) continue;
    const text = flags.value(f.name as Parameters<RunFlagValues['value']>[0]);
    if (text === undefined) throw new TypeError(`--${f.name} has no default`);
    const dflt = DEFAULTS[key];
    if (key.endsWith('Ms')) out[key] = parseDuration(text);
    else if (typeof dflt === 'boolean') {
      if (text !== 'true' && text !== 'false') throw new UsageError(`--${f.name} is true or false`);
      out[key] = text === 'true';
    } else if (COUNTS.has(key)) {
      const n = Number(text);
      if (!Number.isInteger(n) || n < 1) {
        throw new UsageError(`--${f.name} must be a positive integer`);
      }
      out[key] = n;
    } else out[key] = text;
  }
  out.gcDryRun = flags.is('gc-dry-run');
  return out as Settings;
}

/** Refuses what the settings cannot run with, naming the flag. */
function checkSettings(s: Settings): void {
  if (s.output !== 'auto' && s.output !== 'table' && s.output !== 'json') {
    throw new UsageError('--output is auto, table or json');
  }
  if (!LEVELS.includes(s.logLevel)) {
    throw new UsageError(`--log-level ${s.logLevel} is not a pino level`);
  }
  if (s.statusListen !== 'off') {
    try {
      parseListenAddress(s.statusListen);
    } catch (err) {
      throw new UsageError(`--status-listen: ${(err as Error).message}`);
    }
  }
}

/** A probe URL flag's value, checked to be an URL of `scheme`. */
function probeUrl(flags: RunFlagValues, flag: 'probe-url' | 'probe-tls-url', scheme: string) {
  const v = flags.value(flag);
  if (v !== undefined && !URL.canParse(v)) throw new UsageError(`--${flag}: "${v}" is not a URL`);
  if (v !== undefined && new URL(v).protocol !== scheme) {
    throw new UsageError(`--${flag}: "${v}" is not an ${scheme} URL`);
  }
  return v;
}

/** Runs `proxy-op run` (or, with `mode` `down`, `proxy-op down`); resolves with the exit code. */
export async function run(argv: string[], mode: 'run' | 'down' = 'run'): Promise<number> {
  const flags = parseRunFlags(argv, mode);
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
  const settings = settingsOf(flags);
  checkSettings(settings);
  const o: RunOptions & { once: boolean } = {
    ...settings,
    // `down` runs no probes: it only deletes.
    ...(mode === 'down' ? { probeListen: 'off' } : {}),
    output:
      settings.output === 'auto' ? (process.stdout.isTTY ? 'table' : 'json') : settings.output,
    logLevel: settings.logLevel as LevelWithSilent,
    providers: flags.value('providers'),
    probeUrl: probeUrl(flags, 'probe-url', 'http:'),
    probeTlsUrl: probeUrl(flags, 'probe-tls-url', 'https:'),
    once: flags.is('once') || mode === 'down',
  } as RunOptions & { once: boolean };

  if (standalone === undefined) {
    // Loaded only here: the standalone mode never loads the Kubernetes client.
    const { kubeBackend } = await import('../kube/backend.js');
    return runOperator(o, async (ctx) => {
      try {
        return await kubeBackend(
          {
            ...o,
            kubeconfig: flags.value('kubeconfig'),
            context: flags.value('context'),
            namespace: flags.value('namespace'),
            leaderElectionNamespace: flags.value('leader-election-namespace'),
          },
          ctx,
        );
      } catch (err) {
        throw new UsageError(`cannot use the kubeconfig: ${(err as Error).message}`);
      }
    });
  }
  return runOperator(o, (ctx) =>
    standaloneBackend({ ...o, mode, standalone, state: flags.value('state') }, ctx),
  );
}
