/**
 * The probe scheduler: probes every Running proxy through its data plane,
 * at once when the reconciler first sees it Running, then every probe
 * interval (with jitter), with a bounded number of probes in flight over
 * all Proxies and never two for one Proxy (`slots.ts`). Each result moves
 * the Proxy's record (`record.ts`); a change of state (pass to fail, the
 * failing step, the egress IP, remediation due, the provider's
 * short-circuit) queues the Proxy, and the reconciler writes the status
 * from {@link ProbeScheduler.observe}. Each probe is a span under the
 * reconcile trace that last saw the instance, with its steps in the
 * `proxy_op_probe_*` metrics (`instruments.ts`).
 *
 * @module
 */
import { type Context, context } from '@opentelemetry/api';
import { type Logger, silentLogger } from '@proxy-op/contract';
import {
  ProbeAbortedError,
  type ProbeCredentials,
  type ProbeResult,
  type ProbeTargetSpec,
  probe,
} from '@proxy-op/probe';
import { durationMs } from '../api/duration.js';
import type { ProbeStatus } from '../api/proxy.js';
import type { ConfiguredProvider } from '../providers/set.js';
import { ProbeInstruments } from './instruments.js';
import {
  describeFailure,
  entryOf,
  type ProbeEntry,
  ProbeRecord,
  type ProbeSeed,
  type Verdict,
} from './record.js';
import { type ShortCircuit, ShortCircuits } from './remediation.js';
import { DEFAULT_PROBE_SETTINGS, settingsTarget } from './settings.js';
import { ProbeSlots } from './slots.js';
import type { ProbeSchedulerDeps, ProbeSchedulerSettings, RunningInstance } from './types.js';

export type { ProbeSchedulerDeps, ProbeSchedulerSettings, RunningInstance } from './types.js';

/** What the reconciler makes of a Proxy's data plane. */
export type DataPlaneView =
  | {
      readonly probing: false;
      readonly reason: 'ProbeDisabled' | 'NoTarget';
      readonly message: string;
    }
  | {
      readonly probing: true;
      readonly verdict: Verdict;
      readonly message: string;
      readonly status: ProbeStatus | undefined;
      readonly egressIP: string | undefined;
      /** Set when the Proxy opted in to remediation: whether it is due, and the provider's short-circuit. */
      readonly remediation: { readonly due: boolean; readonly circuit: ShortCircuit } | undefined;
    };

/** Probes the Running proxies; see the module comment. */
export class ProbeScheduler {
  readonly #deps: ProbeSchedulerDeps;
  readonly #log: Logger;
  readonly #now: () => Date;
  readonly #opts: ProbeSchedulerSettings;
  readonly #records = new Map<string, ProbeRecord>();
  readonly #parents = new Map<string, Context>();
  readonly #settings = new Map<string, ConfiguredProvider['probe']>();
  readonly #circuits = new ShortCircuits();
  readonly #abort = new AbortController();
  readonly #slots: ProbeSlots;
  readonly #instruments: ProbeInstruments;
  #probes = 0;

  constructor(deps: ProbeSchedulerDeps, settings: ProbeSchedulerSettings) {
    this.#deps = deps;
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? (() => new Date());
    this.#opts = settings;
    this.#slots = new ProbeSlots({
      probeConcurrency: settings.probeConcurrency,
      probeIntervalMs: settings.probeIntervalMs,
      probeJitter: settings.probeJitter,
      random: deps.random ?? Math.random,
      run: (key) => this.#run(key),
    });
    this.#instruments = new ProbeInstruments(deps.tracer, deps.meter, () =>
      [...this.#settings].map(([name, s]) => [
        name,
        this.#circuits.get(name, s.maxUnhealthy).allowed,
      ]),
    );
  }

  /**
   * The data plane of a Running instance: registers it (and probes it at
   * once) when new, starting from `seed` (what its status says), and says
   * what its status is to show. The active OpenTelemetry context (the
   * reconcile's) becomes its probes' parent.
   */
  observe(
    key: string,
    cp: ConfiguredProvider,
    running: RunningInstance,
    remediation: { readonly unhealthyTimeout: string } | undefined,
    seed?: ProbeSeed,
  ): DataPlaneView {
    const settings = cp.probe;
    this.#settings.set(cp.name, settings);
    if (!settings.enabled) {
      this.forget(key);
      return {
        probing: false,
        reason: 'ProbeDisabled',
        message: `probing is off for provider ${cp.name} (probe.enabled: false): Ready says the instance runs, not that a client gets through`,
      };
    }
    const own = settingsTarget(settings);
    const target = own ?? this.#deps.target;
    if (target === undefined) {
      this.forget(key);
      return {
        probing: false,
        reason: 'NoTarget',
        message: `no probe target: the operator runs none and provider ${cp.name} names no probe.url; the data plane is unverified`,
      };
    }
    const instance = {
      provider: cp.name,
      providerID: running.providerID,
      endpoint: running.endpoint,
      running,
      target,
      socks5: settings.socks5 === true,
      targetLabel: String(target.connect ?? target.get),
      remediationMs:
        remediation === undefined ? undefined : durationMs(remediation.unhealthyTimeout),
    };
    const now = this.#now().getTime();
    let rec = this.#records.get(key);
    if (
      rec === undefined ||
      rec.instance.providerID !== running.providerID ||
      rec.instance.endpoint !== running.endpoint
    ) {
      this.forget(key);
      rec = new ProbeRecord(key, instance, now, seed);
      this.#records.set(key, rec);
      this.#parents.set(key, context.active());
      this.#slots.now(key);
    } else {
      const retarget = rec.instance.targetLabel !== instance.targetLabel;
      rec.instance = instance;
      this.#parents.set(key, context.active());
      if (retarget) this.#slots.now(key);
    }
    return this.#view(rec, now);
  }

  #view(rec: ProbeRecord, now: number): DataPlaneView {
    const settings = this.#settings.get(rec.instance.provider) ?? DEFAULT_PROBE_SETTINGS;
    const message =
      rec.verdict === 'passing'
        ? `GET and CONNECT through the proxy reached ${rec.instance.targetLabel}; the target saw ${rec.egressIP ?? 'no address'}`
        : rec.verdict === 'failing'
          ? `the probe through the proxy fails at ${describeFailure(rec.failure)}`
          : `waiting for a probe through the proxy to pass${rec.failure === undefined ? '' : ` (last: ${describeFailure(rec.failure)})`}`;
    return {
      probing: true,
      verdict: rec.verdict,
      message,
      status: rec.published(now, this.#opts.probeStatusRefreshMs),
      egressIP: rec.egressIP,
      remediation:
        rec.instance.remediationMs === undefined
          ? undefined
          : {
              due: rec.remediationDue(now),
              circuit: this.#circuits.get(rec.instance.provider, settings.maxUnhealthy),
            },
    };
  }

  /**
   * The target the probes of `cp`'s proxies go to: the provider's
   * `probe.url`, else the operator's own; undefined while probing is off
   * for it (the reconciler lets the proxies reach it through their
   * destination policy).
   */
  targetFor(cp: ConfiguredProvider): ProbeTargetSpec | undefined {
    if (!cp.probe.enabled) return undefined;
    return settingsTarget(cp.probe) ?? this.#deps.target;
  }

  /**
   * Whether a client gets through `running` with `credentials` now: one
   * probe to the Proxy's target (true when it names none, or probing is off
   * for the provider: then nothing can tell). A credential rotation hands a
   * new credential out only once this passes.
   */
  async verify(
    cp: ConfiguredProvider,
    running: RunningInstance,
    credentials: ProbeCredentials,
  ): Promise<boolean> {
    const target = settingsTarget(cp.probe) ?? this.#deps.target;
    if (!cp.probe.enabled || target === undefined) return true;
    try {
      const r = await probe(running.endpoint, target, {
        timeoutMs: this.#opts.probeTimeoutMs,
        signal: this.#abort.signal,
        credentials,
        socks5: cp.probe.socks5 === true,
      });
      return r.ok;
    } catch (err) {
      if (ProbeAbortedError.isInstance(err)) return false;
      throw err;
    }
  }

  /** Stops probing a Proxy (its instance is gone, replaced, or no longer Running). */
  forget(key: string): void {
    const rec = this.#records.get(key);
    this.#records.delete(key);
    this.#slots.remove(key);
    this.#parents.delete(key);
    if (rec !== undefined) this.#recount(rec.instance.provider);
  }

  /** The instance probed for the Proxy, when it is `providerID` (its address as last seen Running). */
  tracked(key: string, providerID: string): RunningInstance | undefined {
    const i = this.#records.get(key)?.instance;
    return i?.providerID === providerID ? i.running : undefined;
  }

  /** The Proxy's last results, oldest first (at most the history size). */
  history(key: string): readonly ProbeEntry[] {
    return [...(this.#records.get(key)?.history ?? [])];
  }

  /** The Proxy's verdict and last result, for the live table. */
  latest(
    key: string,
  ): { verdict: Verdict; last: ProbeEntry | undefined; egressIP: string | undefined } | undefined {
    const rec = this.#records.get(key);
    return rec === undefined
      ? undefined
      : { verdict: rec.verdict, last: rec.last, egressIP: rec.egressIP };
  }

  /** Proxies probed, probes in flight and waiting, the most in flight at once, and probes run so far. */
  stats(): {
    tracked: number;
    inFlight: number;
    waiting: number;
    peakInFlight: number;
    probes: number;
  } {
    return {
      tracked: this.#records.size,
      inFlight: this.#slots.inFlight,
      waiting: this.#slots.waiting,
      peakInFlight: this.#slots.peak,
      probes: this.#probes,
    };
  }

  /** Stops every timer and aborts the probes in flight; resolves once they have ended. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error('the operator is stopping'));
    await this.#slots.stop();
  }

  /** The Proxy is still what was registered: there, not being deleted, with the same instance. */
  #current(rec: ProbeRecord): boolean {
    const o = this.#deps.store.get(rec.key);
    return (
      o !== undefined &&
      o.metadata.deletionTimestamp === undefined &&
      o.status.providerID === rec.instance.providerID
    );
  }

  async #run(key: string): Promise<void> {
    const rec = this.#records.get(key);
    if (rec === undefined) return;
    if (!this.#current(rec)) {
      this.forget(key);
      return;
    }
    const result = await this.#probe(rec);
    // Forgotten, or registered again for another instance, while the probe ran.
    if (result === undefined || this.#records.get(key) !== rec) return;
    this.#record(rec, result);
  }

  /** One probe, as a span under the reconcile that last saw the instance; undefined when stopped. */
  #probe(rec: ProbeRecord): Promise<ProbeResult | undefined> {
    const { key, instance } = rec;
    const parent = this.#parents.get(key) ?? context.active();
    const attrs = { key, provider: instance.provider, target: instance.targetLabel };
    return this.#instruments.traced(parent, attrs, async () => {
      this.#probes++;
      try {
        return await probe(instance.endpoint, instance.target, {
          timeoutMs: this.#opts.probeTimeoutMs,
          signal: this.#abort.signal,
          credentials: instance.running.credentials,
          socks5: instance.socks5,
        });
      } catch (err) {
        if (ProbeAbortedError.isInstance(err)) return undefined;
        throw err;
      }
    });
  }

  /** Takes a result into the record; queues the Proxy when its state changed. */
  #record(rec: ProbeRecord, r: ProbeResult): void {
    const now = this.#now().getTime();
    const before = rec.state();
    const dueBefore = rec.remediationNotified;
    const moved = rec.record(entryOf(r), now, this.#opts);
    const { key, instance } = rec;
    if (moved !== undefined) this.#transition(rec, moved.from, moved.to);
    let changed = before !== rec.state();
    if (rec.remediationDue(now) && !dueBefore) {
      rec.remediationNotified = true;
      changed = true;
    }
    if (moved !== undefined) this.#recount(instance.provider);
    // The queue merges this with the keys a flip of the short-circuit queued.
    if (changed) this.#deps.onChange(key);
  }

  #transition(rec: ProbeRecord, from: Verdict, to: Verdict): void {
    const { key, instance } = rec;
    const log = this.#log.child({ proxy: key, provider: instance.provider });
    if (to === 'failing') {
      const why =
        from === 'starting'
          ? `no probe passed within the startup timeout (${this.#opts.startupTimeoutMs} ms)`
          : `${rec.failures} probes in a row failed`;
      const message = `${why}; the last failed at ${describeFailure(rec.failure)}`;
      log.warn(
        { providerID: instance.providerID, failure: rec.failure },
        `probe failed: ${message}`,
      );
      this.#deps.store.recordEvent?.(key, 'Warning', 'ProbeFailed', message);
    } else if (to === 'passing') {
      log.info({ egressIP: rec.egressIP }, 'probe passed');
      if (from === 'failing') {
        this.#deps.store.recordEvent?.(
          key,
          'Normal',
          'ProbePassed',
          `probes through the proxy pass again; the target saw ${rec.egressIP ?? 'no address'}`,
        );
      }
    }
  }

  /**
   * Counts the provider's failing proxies again; when its short-circuit
   * flipped, logs it and queues every Proxy of it that opted in to
   * remediation (their `RemediationAllowed` changes). Returns the flip.
   */
  #recount(provider: string): ShortCircuit | undefined {
    const settings = this.#settings.get(provider) ?? DEFAULT_PROBE_SETTINGS;
    const flip = this.#circuits.count(provider, settings.maxUnhealthy, this.#records.values());
    if (flip === undefined) return undefined;
    if (flip.allowed) this.#log.info({ provider }, `remediation allowed again: ${flip.message}`);
    else this.#log.warn({ provider }, `remediation held: ${flip.message}`);
    for (const rec of this.#records.values()) {
      if (rec.instance.provider === provider && rec.instance.remediationMs !== undefined) {
        this.#deps.onChange(rec.key);
      }
    }
    return flip;
  }

  /** Records the Event of a remediation held by the short-circuit, once per failing episode. */
  restricted(key: string, message: string): void {
    const rec = this.#records.get(key);
    if (rec === undefined || rec.restrictedNotified) return;
    rec.restrictedNotified = true;
    this.#deps.store.recordEvent?.(key, 'Warning', 'RemediationRestricted', message);
  }
}
