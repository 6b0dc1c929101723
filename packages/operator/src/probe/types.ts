/**
 * What the probe scheduler is built with, and what it tells a reconcile
 * pass of a Running instance's data plane.
 *
 * @module
 */
import type { Meter, Tracer } from '@opentelemetry/api';
import type { Logger } from '@proxy-op/contract';
import type { ProbeCredentials, ProbeTargetSpec } from '@proxy-op/probe';
import type { Settings } from '../defaults.js';
import type { ProxyStore } from '../store/proxies.js';

/** The settings the scheduler uses (see the package README's flag table). */
export type ProbeSchedulerSettings = Pick<
  Settings,
  | 'probeIntervalMs'
  | 'probeJitter'
  | 'probeTimeoutMs'
  | 'probeConcurrency'
  | 'startupTimeoutMs'
  | 'failureThreshold'
  | 'probeStatusRefreshMs'
  | 'probeHistory'
>;

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
