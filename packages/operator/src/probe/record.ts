/**
 * What the operator remembers of one Proxy's probes, in memory: the
 * instance probed, the verdict (starting, passing, failing) and how it
 * moves with each result (the startup timeout, the failure threshold), the
 * last results (a bounded history, for the status page and the live
 * table), and `status.probe` as last published, which changes only with
 * the state or after the refresh interval, so a status is not written on
 * every probe.
 *
 * @module
 */
import type { ProbeCheckName, ProbeResult, ProbeStepName, ProbeTargetSpec } from '@proxy-op/probe';
import type { ProbeStatus } from '../api/proxy.js';
import type { RunningInstance } from './types.js';

/** Where a Proxy's data plane stands. */
export type Verdict = 'starting' | 'passing' | 'failing';

/** A failed step, in short. */
export interface ProbeFailure {
  /** The check that failed. */
  readonly check: ProbeCheckName;
  /** Its step that failed. */
  readonly step: ProbeStepName;
  /** What happened, in words. */
  readonly message: string;
}

/** One probe's outcome, as the history keeps it. */
export interface ProbeEntry {
  /** When it began (ISO). */
  readonly time: string;
  /** Every step passed. */
  readonly ok: boolean;
  /** The first check's TCP connection to the proxy, in ms. */
  readonly connectMs?: number | undefined;
  /** The first byte of the proxy's answer to the first check, in ms. */
  readonly firstByteMs?: number | undefined;
  /** The whole probe, in ms. */
  readonly totalMs: number;
  /** The address the target saw. */
  readonly egressIP?: string | undefined;
  /** The first step that failed. */
  readonly failure?: ProbeFailure | undefined;
}

/** What the record is told of the instance it probes. */
export interface ProbedInstance {
  readonly provider: string;
  readonly providerID: string;
  /** `http://ip:port`. */
  readonly endpoint: string;
  /** The instance as the reconciler last saw it Running. */
  readonly running: RunningInstance;
  readonly target: ProbeTargetSpec;
  /** Whether each probe also opens a SOCKS5 tunnel (`probe.socks5`). */
  readonly socks5?: boolean | undefined;
  /** How the target is named in messages. */
  readonly targetLabel: string;
  /** `spec.remediation.unhealthyTimeout` in ms, when the Proxy opted in. */
  readonly remediationMs: number | undefined;
}

/**
 * Where a Proxy's status left its data plane: what the probes of an
 * operator that starts again (or of another replica) start from.
 */
export interface ProbeSeed {
  /** The verdict the status records (`DataPlane` True or False). */
  readonly verdict: 'passing' | 'failing';
  /** When it started failing (ms since the epoch). */
  readonly since?: number | undefined;
  /** `status.egressIP`. */
  readonly egressIP?: string | undefined;
  /** `status.probe` as written. */
  readonly published?: ProbeStatus | undefined;
}

/** How a verdict moves. */
export interface VerdictRules {
  readonly startupTimeoutMs: number;
  readonly failureThreshold: number;
  readonly probeHistory: number;
}

/** The condensed entry of a result. */
export function entryOf(r: ProbeResult): ProbeEntry {
  return {
    time: r.startedAt.toISOString(),
    ok: r.ok,
    ...(r.latency.connectMs === undefined ? {} : { connectMs: r.latency.connectMs }),
    ...(r.latency.firstByteMs === undefined ? {} : { firstByteMs: r.latency.firstByteMs }),
    totalMs: r.latency.totalMs,
    ...(r.egressIP === undefined ? {} : { egressIP: r.egressIP }),
    ...(r.failure === undefined ? {} : { failure: r.failure }),
  };
}

/** `get.status: the proxy answered 403 Forbidden`. */
export function describeFailure(f: ProbeFailure | undefined): string {
  return f === undefined ? 'no probe has run yet' : `${f.check}.${f.step}: ${f.message}`;
}

const ms1 = (n: number) => Math.round(n * 10) / 10;

/** The probes of one Proxy's current instance. */
export class ProbeRecord {
  readonly key: string;
  instance: ProbedInstance;
  /** When the instance was first seen Running (ms since the epoch). */
  readonly runningSince: number;
  verdict: Verdict = 'starting';
  /** Consecutive failed probes. */
  failures = 0;
  /** When the verdict became `failing`. */
  failingSince: number | undefined;
  lastPass: number | undefined;
  egressIP: string | undefined;
  readonly history: ProbeEntry[] = [];
  /** The remediation due was told to the reconciler (once per failing episode). */
  remediationNotified = false;
  /** The held remediation's Event was recorded (once per failing episode). */
  restrictedNotified = false;
  #published: ProbeStatus | undefined;
  #seedFailure: ProbeFailure | undefined;
  #publishedState = '';
  #publishedAt = 0;

  /**
   * `seed` is what the Proxy's status says of this instance's data plane,
   * when it says something (an operator that starts again, or another
   * replica that takes over): the record starts from it, so a Proxy that was
   * Ready stays Ready until its probes say otherwise, and nothing is written
   * while they agree.
   */
  constructor(key: string, instance: ProbedInstance, now: number, seed?: ProbeSeed) {
    this.key = key;
    this.instance = instance;
    this.runningSince = now;
    if (seed !== undefined) {
      this.verdict = seed.verdict;
      this.egressIP = seed.egressIP;
      if (seed.verdict === 'failing') this.failingSince = seed.since ?? now;
      const f = seed.published?.lastFailure;
      if (f?.check !== undefined && f.step !== undefined && f.message !== undefined) {
        this.#seedFailure = { check: f.check, step: f.step, message: f.message };
      }
      this.#published = seed.published;
      this.#publishedState = this.state();
      this.#publishedAt = now;
    }
  }

  /** The last result. */
  get last(): ProbeEntry | undefined {
    return this.history.at(-1);
  }

  /** The last failure, while not passing. */
  get failure(): ProbeFailure | undefined {
    if (this.verdict === 'passing') return undefined;
    return this.history.findLast((e) => !e.ok)?.failure ?? this.#seedFailure;
  }

  /**
   * What a status shows of the record: the verdict, the egress IP and the
   * failing step. A change of it is a change of state, written at once.
   */
  state(): string {
    return JSON.stringify([this.verdict, this.egressIP ?? '', describeFailure(this.failure)]);
  }

  /**
   * Takes a result; returns the transition it made (`from` and `to`), if
   * any. A starting instance fails only once `startupTimeoutMs` has passed
   * since it ran; a passing one after `failureThreshold` failures in a row.
   */
  record(
    entry: ProbeEntry,
    now: number,
    rules: VerdictRules,
  ): { from: Verdict; to: Verdict } | undefined {
    this.history.push(entry);
    while (this.history.length > rules.probeHistory) this.history.shift();
    const from = this.verdict;
    if (entry.ok) {
      this.failures = 0;
      this.lastPass = now;
      this.egressIP = entry.egressIP;
      this.verdict = 'passing';
      this.failingSince = undefined;
      this.remediationNotified = false;
      this.restrictedNotified = false;
    } else {
      this.failures++;
      const startupOver = now - this.runningSince >= rules.startupTimeoutMs;
      if (
        (from === 'starting' && startupOver) ||
        (from === 'passing' && this.failures >= rules.failureThreshold)
      ) {
        this.verdict = 'failing';
        this.failingSince = now;
      }
    }
    return from === this.verdict ? undefined : { from, to: this.verdict };
  }

  /** True when the Proxy opted in to remediation and has been failing for its unhealthy timeout. */
  remediationDue(now: number): boolean {
    const ms = this.instance.remediationMs;
    return (
      ms !== undefined &&
      this.verdict === 'failing' &&
      this.failingSince !== undefined &&
      now - this.failingSince >= ms
    );
  }

  /** The median total latency of the passing results kept. */
  p50(): number | undefined {
    const totals = this.history.filter((e) => e.ok).map((e) => e.totalMs);
    if (totals.length === 0) return undefined;
    totals.sort((a, b) => a - b);
    const mid = Math.floor(totals.length / 2);
    return ms1(
      totals.length % 2 === 1
        ? (totals[mid] as number)
        : ((totals[mid - 1] as number) + (totals[mid] as number)) / 2,
    );
  }

  /**
   * `status.probe` as it is to be written now: made again when the state
   * changed or `refreshMs` passed since it was last made, else the same
   * object as before (so the status does not change).
   */
  published(now: number, refreshMs: number): ProbeStatus | undefined {
    const last = this.last;
    if (last === undefined) return undefined;
    const state = this.state();
    if (
      this.#published !== undefined &&
      state === this.#publishedState &&
      now - this.#publishedAt < refreshMs
    ) {
      return this.#published;
    }
    const failed = this.history.findLast((e) => !e.ok);
    const p50 = this.p50();
    const connect = this.instance.target.connect ?? this.instance.target.get;
    this.#published = {
      ...(connect === undefined ? {} : { target: String(connect) }),
      lastProbeTime: last.time,
      result: last.ok ? 'Passed' : 'Failed',
      latency: {
        ...(last.connectMs === undefined ? {} : { connectMs: ms1(last.connectMs) }),
        ...(last.firstByteMs === undefined ? {} : { firstByteMs: ms1(last.firstByteMs) }),
        totalMs: ms1(last.totalMs),
      },
      ...(p50 === undefined ? {} : { p50TotalMs: p50 }),
      consecutiveFailures: this.failures,
      ...(this.lastPass === undefined
        ? {}
        : { lastPassTime: new Date(this.lastPass).toISOString() }),
      ...(failed?.failure === undefined
        ? {}
        : { lastFailure: { time: failed.time, ...failed.failure } }),
    };
    this.#publishedState = state;
    this.#publishedAt = now;
    return this.#published;
  }
}
