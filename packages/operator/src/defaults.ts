/**
 * Every default of the operator in one object: the reconciler's timings, the
 * work queue's backoff, GC and the health monitor, the probes of the data
 * plane and their remediation, the standalone store's state paths, the
 * Kubernetes client, store and leader election, the process's own (the listen address, the shutdown grace), and the status page. The classes fall
 * back to it, the CLI's flags and help text take their defaults from it, and
 * a test holds the README's flag table to it.
 *
 * @module
 */

/** The operator's defaults; times are in milliseconds. */
export const DEFAULTS = Object.freeze({
  // ---- the reconciler and the work queue ----
  /** Concurrent reconciles. */
  workers: 3,
  /** How often a `returns-early` deletion is polled with Get. */
  deletionPollMs: 5000,
  /** How often a provisioning instance is polled. */
  provisioningPollMs: 10_000,
  /** How often a Ready Proxy is checked again. */
  readyResyncMs: 300_000,
  /** The first retry after a failed reconcile; it doubles with each failure. */
  backoffBaseMs: 1000,
  /** The longest retry delay. */
  backoffMaxMs: 300_000,
  /** Jitter of a retry delay, as a fraction of it, spread both ways. */
  backoffJitter: 0.1,
  /** The first retry after QuotaExceeded. */
  quotaBackoffBaseMs: 60_000,
  /** The longest retry delay after QuotaExceeded. */
  quotaBackoffMaxMs: 900_000,
  /** The deadline of one provider call (reconciles and GC). */
  callTimeoutMs: 120_000,

  // ---- GC and the health monitor ----
  /** GC interval (0 disables GC). */
  gcIntervalMs: 300_000,
  /** GC leaves instances younger than this alone: a Create may be in flight. */
  gcMinAgeMs: 600_000,
  /** GC only reports what it would delete. */
  gcDryRun: false,
  /** Health check interval (0 disables the monitor). */
  healthIntervalMs: 60_000,
  /** The deadline of one health check round. */
  checkTimeoutMs: 10_000,

  // ---- probes of the data plane ----
  /** How often a Running proxy is probed through its data plane (0 disables probing). */
  probeIntervalMs: 30_000,
  /** Jitter of the probe interval, as a fraction of it, spread both ways. */
  probeJitter: 0.1,
  /** The deadline of one probe (its GET and its CONNECT together). */
  probeTimeoutMs: 10_000,
  /** Probes in flight at once, over every Proxy. */
  probeConcurrency: 16,
  /** How long a new instance may take to pass its first probe before it counts as failing. */
  startupTimeoutMs: 600_000,
  /** Consecutive failed probes that take a Ready proxy to `Ready=False`, `ProbeFailed`. */
  failureThreshold: 3,
  /** The latency figures of `status.probe` are written again at most this often. */
  probeStatusRefreshMs: 600_000,
  /** Probe results kept in memory per Proxy (for the status page and the live table). */
  probeHistory: 20,
  /** Where the operator's own whoami target listens for HTTP (`off`: no target). */
  probeListen: '127.0.0.1:0',
  /** Where it listens for HTTPS (`off`: CONNECT carries plain HTTP to the HTTP listener). */
  probeTlsListen: '127.0.0.1:0',
  /** `spec.remediation.unhealthyTimeout`: how long a Proxy fails its probes before it is replaced. */
  unhealthyTimeoutMs: 300_000,
  /** A provider's `probe.maxUnhealthy`: more of its probed proxies failing at once stops every replacement. */
  maxUnhealthy: '40%',

  // ---- pools and their gateways ----
  /** Pools reconciled at once. */
  poolWorkers: 2,
  /** The first wait between a pool's remediations in a row; it doubles with each. */
  remediationBackoffBaseMs: 10_000,
  /** The longest wait between a pool's remediations in a row. */
  remediationBackoffMaxMs: 300_000,
  /** How long a provider that latched a pool's Proxy is given none of its new ones. */
  refusalMemoryMs: 300_000,
  /** The first wait before a standalone gateway process that exited is started again; it doubles with each exit. */
  gatewayRestartBaseMs: 1000,
  /** The longest wait before a standalone gateway process is started again. */
  gatewayRestartMaxMs: 30_000,
  /** How often a Kubernetes gateway's Deployment is looked at again while it is not available. */
  gatewayRecheckMs: 5000,
  /** How long a gateway lets a Proxy leaving its list finish, in a pool without rotation. */
  gatewayDrainMs: 30_000,

  // ---- proxy credentials ----
  /** `spec.auth.overlap`: how long a proxy accepts the previous credential after a rotation. */
  credentialOverlapMs: 600_000,
  /** How often a rotation checks again whether the proxy takes the next credential. */
  credentialVerifyPollMs: 2000,

  // ---- the providers file ----
  /** The providers file read when none is named, if it exists. */
  providersFile: 'providers.yaml',
  /** How often the providers file is checked for changes. */
  providersPollMs: 2000,

  // ---- the standalone store ----
  /** The state file of a manifests folder `DIR` is `DIR` with this suffix, beside it. */
  stateFileSuffix: '.state.json',
  /** The state file's lock is the state file with this suffix. */
  lockFileSuffix: '.lock',
  /** How often the manifests folder is rescanned, besides watching it (0: only watching). */
  rescanMs: 5000,
  /** Status writes to the state file are coalesced for this long. */
  flushDelayMs: 50,
  /** Manifest files read at once during a scan. */
  manifestReads: 32,
  /** A manifest file larger than this is refused with a problem naming it (1 MiB). */
  manifestMaxBytes: 1024 * 1024,

  // ---- the process ----
  /** Where `/metrics`, `/healthz` and `/readyz` are served (`off` disables). */
  listen: '127.0.0.1:9464',
  /** Status output: `auto` is a table on a TTY, JSON lines otherwise. */
  output: 'auto',
  /** The pino log level. */
  logLevel: 'info',
  /** On SIGTERM, how long reconciles in flight may finish before their calls are aborted. */
  shutdownGraceMs: 20_000,

  // ---- Kubernetes ----
  /** The deadline of one API request, answer included. */
  requestTimeoutMs: 30_000,
  /** The image a pool's gateway Deployment runs (`proxy-op gateway`): the operator's. */
  gatewayImage: 'ghcr.io/proxy-op/operator:latest',
  /** The field manager named on every write. */
  fieldManager: 'proxy-op',
  /** The Events' `reportingInstance` when the store is given no identity (the CLI gives the host's). */
  identity: 'proxy-op',
  /** Whether the operator takes part in leader election. */
  leaderElect: true,
  /** The Lease's name. */
  leaderElectionId: 'proxy-op',
  /** The Lease's namespace when neither the flag, `$POD_NAMESPACE` nor the service account says. */
  leaderElectionNamespace: 'proxy-op-system',
  /** How long a Lease holds without renewal (client-go's default). */
  leaseDurationMs: 15_000,
  /** The leader stops leading when it could not renew for this long. */
  renewDeadlineMs: 10_000,
  /** How often the Lease is tried and renewed. */
  retryPeriodMs: 2000,
  /** Writes that conflict are retried on top of a fresh read this many times. */
  conflictAttempts: 5,
  /** The first delay before a failed list or watch is started again; it doubles up to the max. */
  informerRestartBaseMs: 500,
  /** The longest delay before a failed list or watch is started again. */
  informerRestartMaxMs: 30_000,
  /** Proxies listed per page. */
  listPageSize: 500,
  /** Events sent at once. */
  eventsInFlight: 2,
  /** Events waiting to be sent at most; beyond it they are dropped with a warning. */
  eventQueueSize: 1000,

  // ---- the status page ----
  /** Where the status page is served (`off`: not at all); loopback only, so on Kubernetes through `kubectl port-forward`. */
  statusListen: '127.0.0.1:9465',
  /** Changes are pushed to the page's viewers at most this often (one message per interval, whatever changed). */
  statusPushMs: 500,
  /** How often a quiet event stream carries a comment, so proxies and browsers keep it open. */
  statusHeartbeatMs: 15_000,
  /** A viewer that has this much of the stream unread is disconnected (its page connects again and starts afresh). */
  statusClientBufferBytes: 4 * 1024 * 1024,
  /** Viewers at once; more are answered 503. */
  statusMaxViewers: 64,
  /** Event streams one source address may hold at once; more are answered 429, so one client cannot take them all. */
  statusStreamsPerSource: 8,
  /** Events kept in memory per Proxy for its detail view (the newest). */
  statusEventsPerProxy: 20,
});

/** The type of {@link DEFAULTS}. */
export type Defaults = typeof DEFAULTS;

/**
 * Every setting of the operator, each named as {@link DEFAULTS} names its
 * default (and `run` its flag: `--probe-interval` is `probeIntervalMs`).
 * The parts of the operator take the settings they use under these names,
 * with no default of their own: the defaults are applied once, where the
 * flags are read or where the operator is built.
 */
export type Settings = { readonly [K in keyof Defaults]: Widened<Defaults[K]> };

/** A default's literal type widened to what a setting may hold. */
type Widened<T> = T extends number
  ? number
  : T extends string
    ? string
    : T extends boolean
      ? boolean
      : T;

/** `given` over {@link DEFAULTS}: the one place a default is applied to a setting. */
export function withDefaults(given: Partial<Settings> = {}): Settings {
  const out: Record<string, unknown> = { ...DEFAULTS };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) out[k] = v;
  return out as Settings;
}
