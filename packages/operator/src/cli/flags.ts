/**
 * The flags of `run` (and `down`) in one table, each with its default taken
 * from {@link DEFAULTS}: the parser, the help text and the README's flag
 * table (held to it by a test) are all made from it.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { DEFAULTS, type Defaults } from '../defaults.js';
import { DEFAULT_PROVIDER } from '../providers/default.js';
import { formatDuration } from './args.js';

/** One flag of `run`. */
export interface RunFlag {
  /** The name, without the dashes. */
  readonly name: string;
  /** The value's placeholder in the help text; absent for a boolean flag. */
  readonly value?: string;
  /** The value's placeholder in the README's table, where it differs from {@link value}. */
  readonly docValue?: string;
  /** The key of its default in {@link DEFAULTS}; absent where an unset flag means what {@link doc} says. */
  readonly defaultKey?: DefaultKey;
  /** The README table's default (Markdown) of a flag with no {@link defaultKey}. */
  readonly doc?: string;
  /** The help text; `{default}` stands for the default, and a `\n` starts a continuation line. */
  readonly help: string;
  /** Listed under "On Kubernetes:" in the help text. */
  readonly kubernetes?: true;
}

/** A key of {@link DEFAULTS} whose value a flag can take. */
export type DefaultKey = {
  [K in keyof Defaults]: Defaults[K] extends string | number | boolean ? K : never;
}[keyof Defaults];

/** A default as a flag's value: milliseconds (a key ending in `Ms`) as a duration. */
export function flagDefault(key: DefaultKey): string {
  const v = DEFAULTS[key];
  return key.endsWith('Ms') ? formatDuration(v as number) : String(v);
}

/** The flags of `run`, in the order of the help text and the README. */
export const RUN_FLAGS = [
  {
    name: 'standalone',
    value: 'DIR',
    doc: '(Kubernetes)',
    help: 'folder of Proxy manifests instead of a cluster',
  },
  {
    name: 'providers',
    value: 'FILE',
    doc: `\`${DEFAULTS.providersFile}\` if it exists`,
    help: `providers file (default ${DEFAULTS.providersFile} when it exists; without one,\nor when it lists none, the built-in "${DEFAULT_PROVIDER}" provider)`,
  },
  {
    name: 'state',
    value: 'FILE',
    doc: `\`DIR${DEFAULTS.stateFileSuffix}\``,
    help: `state file (standalone; default DIR${DEFAULTS.stateFileSuffix}, beside DIR)`,
  },
  {
    name: 'listen',
    value: 'HOST:PORT',
    defaultKey: 'listen',
    help: '/metrics, /healthz, /readyz address (default {default}; "off" disables)',
  },
  {
    name: 'status-listen',
    value: 'HOST:PORT',
    defaultKey: 'statusListen',
    help: 'the status page (default {default}; "off" disables)',
  },
  {
    name: 'workers',
    value: 'N',
    defaultKey: 'workers',
    help: 'concurrent reconciles (default {default})',
  },
  {
    name: 'deletion-poll',
    value: 'D',
    defaultKey: 'deletionPollMs',
    help: 'Get poll of a returns-early deletion (default {default})',
  },
  {
    name: 'provisioning-poll',
    value: 'D',
    defaultKey: 'provisioningPollMs',
    help: 'poll of a provisioning instance (default {default})',
  },
  {
    name: 'ready-resync',
    value: 'D',
    defaultKey: 'readyResyncMs',
    help: 'recheck of a Ready Proxy (default {default})',
  },
  {
    name: 'backoff-base',
    value: 'D',
    defaultKey: 'backoffBaseMs',
    help: 'first retry after a failure (default {default})',
  },
  {
    name: 'backoff-max',
    value: 'D',
    defaultKey: 'backoffMaxMs',
    help: 'longest retry delay (default {default})',
  },
  {
    name: 'quota-backoff-base',
    value: 'D',
    defaultKey: 'quotaBackoffBaseMs',
    help: 'first retry after QuotaExceeded (default {default})',
  },
  {
    name: 'quota-backoff-max',
    value: 'D',
    defaultKey: 'quotaBackoffMaxMs',
    help: 'longest retry after QuotaExceeded (default {default})',
  },
  {
    name: 'call-timeout',
    value: 'D',
    defaultKey: 'callTimeoutMs',
    help: 'deadline of one provider call (default {default})',
  },
  {
    name: 'gc-interval',
    value: 'D',
    defaultKey: 'gcIntervalMs',
    help: 'GC interval, 0 disables (default {default})',
  },
  {
    name: 'gc-min-age',
    value: 'D',
    defaultKey: 'gcMinAgeMs',
    help: 'GC leaves younger instances alone (default {default})',
  },
  { name: 'gc-dry-run', doc: 'off', help: 'GC only reports' },
  {
    name: 'health-interval',
    value: 'D',
    defaultKey: 'healthIntervalMs',
    help: 'health check interval, 0 disables (default {default})',
  },
  {
    name: 'check-timeout',
    value: 'D',
    defaultKey: 'checkTimeoutMs',
    help: 'deadline of one health check round (default {default})',
  },
  {
    name: 'probe-interval',
    value: 'D',
    defaultKey: 'probeIntervalMs',
    help: 'probe of each Running proxy through its data plane, 0 disables\n(default {default})',
  },
  {
    name: 'probe-timeout',
    value: 'D',
    defaultKey: 'probeTimeoutMs',
    help: 'deadline of one probe (default {default})',
  },
  {
    name: 'probe-concurrency',
    value: 'N',
    defaultKey: 'probeConcurrency',
    help: 'probes in flight at once (default {default})',
  },
  {
    name: 'startup-timeout',
    value: 'D',
    defaultKey: 'startupTimeoutMs',
    help: 'time a new proxy has to pass its first probe (default {default})',
  },
  {
    name: 'failure-threshold',
    value: 'N',
    defaultKey: 'failureThreshold',
    help: 'failed probes in a row that make a Ready proxy ProbeFailed (default {default})',
  },
  {
    name: 'probe-status-refresh',
    value: 'D',
    defaultKey: 'probeStatusRefreshMs',
    help: "status.probe's latencies are written again at most this often\n(default {default})",
  },
  {
    name: 'probe-listen',
    value: 'HOST:PORT',
    defaultKey: 'probeListen',
    help: 'the probe target\'s HTTP listener (default {default}: a free port;\n"off": no target of its own)',
  },
  {
    name: 'probe-tls-listen',
    value: 'HOST:PORT',
    defaultKey: 'probeTlsListen',
    help: 'its HTTPS listener (default {default}; "off": CONNECT to the HTTP one)',
  },
  {
    name: 'probe-url',
    value: 'URL',
    doc: 'the HTTP listener',
    help: 'where the proxies reach the HTTP listener (default its address)',
  },
  {
    name: 'probe-tls-url',
    value: 'URL',
    doc: 'the HTTPS listener',
    help: 'where they reach the HTTPS listener (default its address; its certificate is\nthen not checked, the nonce is)',
  },
  {
    name: 'rescan',
    value: 'D',
    defaultKey: 'rescanMs',
    help: 'manifest folder rescan, besides watching (standalone; default {default})',
  },
  {
    name: 'providers-poll',
    value: 'D',
    defaultKey: 'providersPollMs',
    help: 'providers file change poll (default {default})',
  },
  {
    name: 'output',
    value: 'auto|table|json',
    docValue: 'MODE',
    defaultKey: 'output',
    help: 'status output on stdout (default {default}: table on a TTY, JSON lines otherwise)',
  },
  {
    name: 'log-level',
    value: 'LEVEL',
    defaultKey: 'logLevel',
    help: 'trace, debug, info, warn, error, silent (default {default}; logs go to stderr)',
  },
  {
    name: 'once',
    doc: 'off',
    help: '(standalone) exit when every Proxy is settled (after one GC pass when\nGC is on): 0 when all are Ready, 1 otherwise (also when SIGINT or\nSIGTERM stops it before that)',
  },
  {
    name: 'kubeconfig',
    value: 'FILE',
    doc: '`$KUBECONFIG`, `~/.kube/config`, in-cluster',
    help: 'kubeconfig (default $KUBECONFIG, ~/.kube/config, else in-cluster)',
    kubernetes: true,
  },
  {
    name: 'context',
    value: 'NAME',
    doc: 'the current context',
    help: 'kubeconfig context (default its current context)',
    kubernetes: true,
  },
  {
    name: 'namespace',
    value: 'NS',
    doc: 'every namespace',
    help: 'reconcile the Proxies of NS only (default every namespace)',
    kubernetes: true,
  },
  {
    name: 'leader-elect',
    value: 'BOOL',
    defaultKey: 'leaderElect',
    help: 'take part in leader election (default {default})',
    kubernetes: true,
  },
  {
    name: 'leader-election-namespace',
    value: 'NS',
    doc: `\`$POD_NAMESPACE\`, the service account's, else \`${DEFAULTS.leaderElectionNamespace}\``,
    help: `the Lease's namespace (default $POD_NAMESPACE, the service\naccount's namespace, else ${DEFAULTS.leaderElectionNamespace})`,
    kubernetes: true,
  },
  {
    name: 'leader-election-id',
    value: 'NAME',
    defaultKey: 'leaderElectionId',
    help: "the Lease's name (default {default})",
    kubernetes: true,
  },
  {
    name: 'lease-duration',
    value: 'D',
    defaultKey: 'leaseDurationMs',
    help: 'how long a Lease holds without renewal (default {default})',
    kubernetes: true,
  },
  {
    name: 'renew-deadline',
    value: 'D',
    defaultKey: 'renewDeadlineMs',
    help: 'the leader stops leading when it could not renew for this long (default {default})',
    kubernetes: true,
  },
  {
    name: 'retry-period',
    value: 'D',
    defaultKey: 'retryPeriodMs',
    help: 'how often the Lease is tried and renewed (default {default})',
    kubernetes: true,
  },
  {
    name: 'shutdown-grace',
    value: 'D',
    defaultKey: 'shutdownGraceMs',
    help: 'on SIGTERM, how long reconciles in flight may finish (default {default})',
    kubernetes: true,
  },
  {
    name: 'request-timeout',
    value: 'D',
    defaultKey: 'requestTimeoutMs',
    help: 'deadline of one API request (default {default})',
    kubernetes: true,
  },
  {
    name: 'gateway-image',
    value: 'IMAGE',
    defaultKey: 'gatewayImage',
    help: "the image of a ProxyPool's gateway Pods, which run proxy-op gateway\n(default {default})",
    kubernetes: true,
  },
] as const satisfies readonly RunFlag[];

type Flag = (typeof RUN_FLAGS)[number];
/** The name of a flag of `run` that takes a value. */
export type ValueFlag = Extract<Flag, { value: string }>['name'];
/** The name of a boolean flag of `run`. */
export type BooleanFlag = Exclude<Flag, { value: string }>['name'];

/** The flags of one `run` or `down` command line. */
export interface RunFlagValues {
  /** The flag's value, or its default (undefined when it has none and is not given). */
  value(name: ValueFlag): string | undefined;
  /** Whether a boolean flag is given. */
  is(name: BooleanFlag | 'help'): boolean;
}

/** Parses a `run` (or, with `mode` `down`, a `down`) command line; `down`'s `--listen` defaults to `off`. */
export function parseRunFlags(argv: string[], mode: 'run' | 'down'): RunFlagValues {
  const options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }> = {};
  for (const f of RUN_FLAGS as readonly RunFlag[]) {
    if (f.value === undefined) options[f.name] = { type: 'boolean', default: false };
    else if (f.defaultKey === undefined) options[f.name] = { type: 'string' };
    else options[f.name] = { type: 'string', default: flagDefault(f.defaultKey) };
  }
  if (mode === 'down') {
    options.listen = { type: 'string', default: 'off' };
    options['status-listen'] = { type: 'string', default: 'off' };
  }
  options.help = { type: 'boolean' };
  const { values } = parseArgs({ args: argv, options });
  return {
    value: (name) => values[name] as string | undefined,
    is: (name) => values[name] === true,
  };
}

/** The column where a flag's help text starts. */
const HELP_COLUMN = 28;

/** The help lines of one flag. */
function helpLines(f: RunFlag): string {
  const head = `  --${f.name}${f.value === undefined ? '' : ` ${f.value}`}`;
  const shown = f.defaultKey === undefined ? '' : flagDefault(f.defaultKey);
  const [first = '', ...rest] = f.help.replace('{default}', shown).split('\n');
  const pad = ' '.repeat(HELP_COLUMN);
  const lines =
    head.length < HELP_COLUMN ? [head.padEnd(HELP_COLUMN) + first] : [head, pad + first];
  for (const line of rest) lines.push(pad + line);
  return lines.join('\n');
}

/** `proxy-op run --help`. */
export function runHelp(): string {
  const flags = RUN_FLAGS as readonly RunFlag[];
  const common = flags.filter((f) => f.kubernetes !== true).map(helpLines);
  const kube = flags.filter((f) => f.kubernetes === true).map(helpLines);
  return `usage: proxy-op run [--standalone DIR] [flags]

Without --standalone the Proxies are those of a Kubernetes cluster.

${common.join('\n')}

On Kubernetes:
${kube.join('\n')}

Durations: 500ms, 10s, 5m, 1h (or 0).
`;
}
