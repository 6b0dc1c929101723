/**
 * What the steps of a reconcile pass work with: what every pass of the
 * reconciler shares ({@link PassEnv}), what one pass hands a step kept in
 * a file of its own ({@link StepContext}), and the part of the probe
 * scheduler a pass uses ({@link DataPlane}).
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { ProbeCredentials } from '@proxy-op/probe';
import type { ProxyObject } from '../api/proxy.js';
import type { ProbeScheduler, RunningInstance } from '../probe/scheduler.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import type { Backoff } from '../runtime/queue.js';
import type { CredentialStore } from '../store/credentials.js';
import type { EventType, ProxyStore } from '../store/proxies.js';
import type { StatusDraft } from './status-draft.js';

/** What every pass of a reconciler shares. */
export interface PassEnv {
  readonly store: ProxyStore;
  readonly providers: ProviderSet;
  /** The QuotaExceeded backoff, per key. */
  readonly quota: Backoff;
  readonly deletionPollMs: number;
  readonly provisioningPollMs: number;
  readonly readyResyncMs: number;
  /** The probes of the data plane; absent when probing is off. */
  readonly probes?: DataPlane | undefined;
  /** Where the Proxies' credentials are kept. */
  readonly credentials: CredentialStore;
  /** Runs one provider call with the call deadline and the shutdown signal. */
  call<T>(fn: (opts: { signal: AbortSignal }) => Promise<T>): Promise<T>;
}

/** The part of the probe scheduler a reconcile pass uses. */
export type DataPlane = Pick<
  ProbeScheduler,
  'observe' | 'forget' | 'tracked' | 'restricted' | 'verify' | 'targetFor'
>;

/** What a step of a pass works with: the pass's object, status and helpers. */
export interface StepContext {
  readonly env: PassEnv;
  readonly key: string;
  readonly obj: ProxyObject;
  readonly status: StatusDraft;
  readonly log: Logger;
  /** The credential clients use now, when the proxy requires one (the probes send it). */
  readonly credentials?: ProbeCredentials | undefined;
  /**
   * Brings a Running instance's credentials up to date (before its status
   * is written); resolves with how long until a rotation's next step.
   */
  syncCredentials?(cp: ConfiguredProvider, instance: RunningInstance): Promise<number | undefined>;
  event(type: EventType, reason: string, message: string): void;
  /** Deletes the instance; true once it is gone. */
  deleteInstance(cp: ConfiguredProvider, id: string): Promise<boolean>;
}
