/**
 * What the probe scheduler is built with, and what it tells a reconcile
 * pass of a Running instance's data plane.
 *
 * @module
 */
import type { Meter, Tracer } from '@opentelemetry/api';
import type { Logger } from '@proxy-op/contract';
import type { ProbeCredentials, ProbeTargetSpec } from '@proxy-op/probe';
import type { ProxyStore } from '../store/proxies.js';

/** The scheduler's tunables, in milliseconds where a time. */
export interface ProbeSchedulerOptions {
  /** Probe interval (default 30000). */
  readonly intervalMs?: number | undefined;
  /** Jitter of the interval as a fraction, both ways (default 0.1). */
  readonly jitter?: number | undefined;
  /** One probe's deadline (default 10000). */
  readonly timeoutMs?: number | undefined;
  /** Probes in flight at once (default 16). */
  readonly concurrency?: number | undefined;
  /** A new instance's time to pass its first probe (default 600000). */
  readonly startupTimeoutMs?: number | undefined;
  /** Failures in a row that make a passing proxy fail (default 3). */
  readonly failureThreshold?: number | undefined;
  /** `status.probe`'s figures are published again at most this often (default 600000). */
  readonly statusRefreshMs?: number | undefined;
  /** Results kept per Proxy (default 20). */
  readonly historySize?: number | undefined;
}

/** What the scheduler is built with. */
export interface ProbeSchedulerDeps {
  /** The Proxies (whose instance is checked before each probe) and their Events. */
  readonly store: ProxyStore;
  /** The operator's own whoami target; providers without a `probe.url` are probed against it. */
  readonly target?: ProbeTargetSpec | undefined;
  /** Told the key of a Proxy whose data plane changed state (the operator queues it). */
  readonly onChange: (key: string) => void;
  /** Where transitions are logged. */
  readonly logger?: Logger | undefined;
  /** The tracer of the `proxy.probe` spans. */
  readonly tracer?: Tracer | undefined;
  /** The meter of the `proxy_op_probe_*` metrics. */
  readonly meter?: Meter | undefined;
  /** The clock. */
  readonly now?: (() => Date) | undefined;
  /** The random source of the jitter, in [0, 1). */
  readonly random?: (() => number) | undefined;
}

/** A Running instance, as the reconciler found it. */
export interface RunningInstance {
  /** The instance's ID. */
  readonly providerID: string;
  /** Its address. */
  readonly ip: string;
  /** The port its proxy listens on. */
  readonly port: number;
  /** `http://ip:port`. */
  readonly endpoint: string;
  /** The credential clients use now, when the proxy requires one; the probes send it. */
  readonly credentials?: ProbeCredentials | undefined;
}
