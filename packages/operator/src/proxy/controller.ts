/**
 * The operator: the work queue, the reconciler, GC and the health monitor
 * wired over a store and a set of providers.
 *
 * @module
 */
import { type Meter, metrics, type Tracer } from '@opentelemetry/api';
import { type Logger, silentLogger } from '@proxy-op/contract';
import type { ProbeTargetSpec } from '@proxy-op/probe';
import type { Phase, ProviderHealth } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { ProbeScheduler, type ProbeSchedulerOptions } from '../probe/scheduler.js';
import type { ProvidersConfig } from '../providers/file.js';
import type { ProviderSet, ProvidersChange } from '../providers/set.js';
import { messageOf } from '../runtime/message.js';
import { WorkQueue } from '../runtime/queue.js';
import type { CredentialStore } from '../store/credentials.js';
import { type ProxyStore, proxyKey } from '../store/proxies.js';
import { collectGarbage, type GcReport } from './gc.js';
import { checkProvider, toProviderHealth } from './health.js';
import { Reconciler, type ReconcilerOptions } from './reconciler.js';

/** Every tunable of the operator, in milliseconds where a time. */
export interface OperatorOptions extends ReconcilerOptions {
  /** Concurrent reconciles (default 3). */
  readonly workers?: number | undefined;
  /** First retry after a failed reconcile (default 1000). */
  readonly backoffBaseMs?: number | undefined;
  /** Longest retry delay (default 300000). */
  readonly backoffMaxMs?: number | undefined;
  /** Jitter as a fraction of the delay (default 0.1). */
  readonly backoffJitter?: number | undefined;
  /** GC interval (default 300000; 0 disables GC). */
  readonly gcIntervalMs?: number | undefined;
  /** GC leaves instances younger than this (default 600000). */
  readonly gcMinAgeMs?: number | undefined;
  /** GC only reports (default false). */
  readonly gcDryRun?: boolean | undefined;
  /** Health check interval (default 60000; 0 disables the monitor). */
  readonly healthIntervalMs?: number | undefined;
  /** Deadline of one check round (default 10000). */
  readonly checkTimeoutMs?: number | undefined;
  /** Probe interval of the data plane (default 30000; 0 turns probing off). */
  readonly probeIntervalMs?: number | undefined;
  /** The probe scheduler's other tunables (timeout, concurrency, startup timeout, threshold, ...). */
  readonly probes?: Omit<ProbeSchedulerOptions, 'intervalMs'> | undefined;
}

/** What the operator is built with. */
export interface OperatorDeps {
  /** Where the Proxies are read and their status written. */
  readonly store: ProxyStore;
  /** The configured providers. */
  readonly providers: ProviderSet;
  /** Where the operator logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The tracer for reconcile spans; the global one when omitted. */
  readonly tracer?: Tracer | undefined;
  /** The meter for the operator's metrics; the global one when omitted. */
  readonly meter?: Meter | undefined;
  /** The clock; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
  /** The random source of the backoff jitter (`Math.random` by default), for tests. */
  readonly random?: (() => number) | undefined;
  /**
   * The operator's own whoami target (the CLI starts one). Without it, only
   * providers whose `probe.url` names a target are probed.
   */
  readonly probeTarget?: ProbeTargetSpec | undefined;
  /** Where the Proxies' credentials are kept; in memory when omitted (lost at exit). */
  readonly credentials?: CredentialStore | undefined;
}

/**
 * Runs the reconciler on N workers over the store's keys, GC every GC
 * interval and the health monitor every health interval.
 */
export class Operator {
  /** The work queue of Proxy keys the workers take from. */
  readonly queue: WorkQueue;
  /** The reconciler the workers run. */
  readonly reconciler: Reconciler;
  /** The probes of the data plane; undefined when probing is off (`probeIntervalMs: 0`). */
  readonly probes: ProbeScheduler | undefined;
  readonly #deps: OperatorDeps;
  readonly #opts: OperatorOptions;
  readonly #log: Logger;
  /** The stop signal: aborts the provider calls of reconciles, GC and health checks in flight. */
  readonly #abort = new AbortController();
  readonly #timers: Array<ReturnType<typeof setInterval>> = [];
  /** GC passes and health rounds under way; stop() waits for them. */
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #now: () => Date;
  #unwatch: (() => void) | undefined;
  #gcCounter;
  #started = false;

  constructor(deps: OperatorDeps, opts: OperatorOptions = {}) {
    this.#deps = deps;
    this.#opts = opts;
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? (() => new Date());
    const meter = deps.meter ?? metrics.getMeter('@proxy-op/operator');
    const reconciles = meter.createCounter('proxy_op.reconcile.total', {
      description: 'Reconcile passes by outcome',
    });
    const duration = meter.createHistogram('proxy_op.reconcile.duration', {
      description: 'Reconcile pass duration',
      unit: 's',
    });
    this.#gcCounter = meter.createCounter('proxy_op.gc.deletions', {
      description: 'Orphaned instances GC deleted (or, in a dry run, would delete)',
    });
    this.queue = new WorkQueue({
      workers: opts.workers ?? DEFAULTS.workers,
      backoff: {
        ...(opts.backoffBaseMs !== undefined ? { baseMs: opts.backoffBaseMs } : {}),
        ...(opts.backoffMaxMs !== undefined ? { maxMs: opts.backoffMaxMs } : {}),
        ...(opts.backoffJitter !== undefined ? { jitter: opts.backoffJitter } : {}),
        ...(deps.random !== undefined ? { random: deps.random } : {}),
      },
      onError: (key, err, retryInMs) => {
        this.#log.warn({ proxy: key, err: messageOf(err), retryInMs }, 'reconcile failed');
      },
      onDone: (_key, ms, outcome) => {
        reconciles.add(1, { outcome });
        duration.record(ms / 1000, { outcome });
      },
    });
    const probeEvery = opts.probeIntervalMs ?? DEFAULTS.probeIntervalMs;
    this.probes =
      probeEvery > 0
        ? new ProbeScheduler(
            {
              store: deps.store,
              target: deps.probeTarget,
              onChange: (key) => this.queue.add(key),
              logger: deps.logger,
              tracer: deps.tracer,
              meter,
              now: deps.now,
              random: deps.random,
            },
            { ...opts.probes, intervalMs: probeEvery },
          )
        : undefined;
    this.reconciler = new Reconciler(
      {
        store: deps.store,
        providers: deps.providers,
        logger: deps.logger,
        tracer: deps.tracer,
        now: deps.now,
        random: deps.random,
        signal: this.#abort.signal,
        probes: this.probes,
        credentials: deps.credentials,
      },
      opts,
    );
    const phases = meter.createObservableGauge('proxy_op.proxies', {
      description: 'Proxies by phase',
    });
    phases.addCallback((r) => {
      for (const [phase, n] of Object.entries(this.phases())) r.observe(n, { phase });
    });
    const depth = meter.createObservableGauge('proxy_op.queue.depth', {
      description: 'Keys waiting in the work queue',
    });
    depth.addCallback((r) => r.observe(this.queue.length));
    const ready = meter.createObservableGauge('proxy_op.provider.ready', {
      description: '1 when every target of a provider is ready',
    });
    ready.addCallback((r) => {
      for (const h of deps.store.listHealth())
        r.observe(h.status.ready ? 1 : 0, { provider: h.name });
    });
  }

  /** Starts the workers, queues every Proxy, and starts GC and the health monitor. */
  start(): void {
    if (this.#started) throw new Error('Operator: already started');
    this.#started = true;
    this.#unwatch = this.#deps.store.watch((key) => this.queue.add(key));
    this.queue.start((key) => this.reconciler.reconcile(key));
    this.enqueueAll();
    const gcEvery = this.#opts.gcIntervalMs ?? DEFAULTS.gcIntervalMs;
    if (gcEvery > 0) this.#every(gcEvery, () => this.runGc());
    const healthEvery = this.#opts.healthIntervalMs ?? DEFAULTS.healthIntervalMs;
    if (healthEvery > 0) {
      this.#background(this.runHealth());
      this.#every(healthEvery, () => this.runHealth());
    }
  }

  #background(p: Promise<unknown>): void {
    p.catch((err: unknown) => this.#log.error({ err: String(err) }, 'background task failed'));
  }

  /** Keeps `p` among the tasks stop() waits for until it settles. */
  #track<T>(p: Promise<T>): Promise<T> {
    this.#tasks.add(p);
    const forget = () => this.#tasks.delete(p);
    p.then(forget, forget);
    return p;
  }

  #every(ms: number, fn: () => Promise<unknown>): void {
    let busy = false;
    const t = setInterval(() => {
      if (busy) return;
      busy = true;
      fn()
        .catch((err: unknown) => this.#log.error({ err: String(err) }, 'periodic task failed'))
        .finally(() => {
          busy = false;
        });
    }, ms);
    t.unref?.();
    this.#timers.push(t);
  }

  /** Queues every Proxy in the store. */
  enqueueAll(): void {
    for (const p of this.#deps.store.list()) {
      this.queue.add(proxyKey(p.metadata.namespace, p.metadata.name));
    }
  }

  /**
   * Applies a new providers config (only changed providers are rebuilt) and
   * queues the Proxies the change concerns.
   */
  async applyProviders(config: ProvidersConfig): Promise<ProvidersChange & { problems: string[] }> {
    const change = await this.#deps.providers.apply(config);
    const touched = new Set([
      ...change.added,
      ...change.rebuilt,
      ...change.removed,
      ...change.probeChanged,
    ]);
    for (const name of change.removed) {
      await this.#deps.store.deleteHealth(name).catch((err: unknown) => {
        this.#log.error(
          { provider: name, err: messageOf(err) },
          'deleting the ProviderHealth of a removed provider failed',
        );
      });
    }
    if (this.#started) {
      for (const p of this.#deps.store.list()) {
        if (
          change.installationChanged ||
          touched.has(p.spec.provider) ||
          (p.status.instanceProvider !== undefined && touched.has(p.status.instanceProvider))
        ) {
          this.queue.add(proxyKey(p.metadata.namespace, p.metadata.name));
        }
      }
      if (touched.size > 0) this.#background(this.runHealth());
    }
    this.#log.info(
      {
        added: change.added,
        rebuilt: change.rebuilt,
        removed: change.removed,
        kept: change.kept,
      },
      'providers config applied',
    );
    return change;
  }

  /** One GC pass over every provider; the operator's stop ends it. */
  runGc(): Promise<GcReport[]> {
    return this.#track(this.#gc());
  }

  async #gc(): Promise<GcReport[]> {
    const out: GcReport[] = [];
    for (const cp of this.#deps.providers.list()) {
      const report = await collectGarbage(cp, this.#deps.store, this.#deps.providers.installation, {
        minAgeMs: this.#opts.gcMinAgeMs ?? DEFAULTS.gcMinAgeMs,
        dryRun: this.#opts.gcDryRun ?? false,
        callTimeoutMs: this.#opts.callTimeoutMs,
        logger: this.#log,
        now: this.#now(),
        signal: this.#abort.signal,
      });
      if (report.deleted.length > 0) {
        this.#gcCounter.add(report.deleted.length, {
          provider: cp.name,
          dry_run: String(this.#opts.gcDryRun ?? false),
        });
      }
      out.push(report);
    }
    return out;
  }

  /**
   * One health round: every provider with a Checker, concurrently; writes
   * ProviderHealth. The operator's stop ends it, and a round it cut short
   * writes nothing.
   */
  runHealth(): Promise<ProviderHealth[]> {
    return this.#track(this.#health());
  }

  async #health(): Promise<ProviderHealth[]> {
    const timeout = this.#opts.checkTimeoutMs ?? DEFAULTS.checkTimeoutMs;
    const stop = this.#abort.signal;
    const previous = new Map(this.#deps.store.listHealth().map((h) => [h.name, h]));
    const out = await Promise.all(
      this.#deps.providers.list().map(async (cp) => {
        const results = await checkProvider(cp, timeout, stop);
        if (results === undefined || stop.aborted) return undefined;
        const health = toProviderHealth(
          cp.name,
          cp.type,
          results,
          previous.get(cp.name),
          this.#now(),
        );
        await this.#deps.store.writeHealth(health);
        return health;
      }),
    );
    return out.filter((h): h is ProviderHealth => h !== undefined);
  }

  /** Proxies counted by phase (`Pending` for a Proxy with no phase yet). */
  phases(): Record<Phase, number> {
    const out: Record<Phase, number> = {
      Pending: 0,
      Provisioning: 0,
      Ready: 0,
      Unhealthy: 0,
      Replacing: 0,
      Deleting: 0,
      Failed: 0,
    };
    for (const p of this.#deps.store.list()) {
      const phase = p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending');
      out[phase]++;
    }
    return out;
  }

  /**
   * True when nothing is left to do right now: no key queued or in flight,
   * no Proxy being deleted, and every Proxy Ready, Unhealthy (its probes
   * fail), Failed, or waiting for its provider to be configured, at its
   * current generation.
   */
  settled(): boolean {
    if (this.queue.length > 0 || this.queue.inFlight > 0) return false;
    for (const p of this.#deps.store.list()) {
      if (p.metadata.deletionTimestamp !== undefined) return false;
      if (p.status.observedGeneration !== p.metadata.generation) return false;
      const phase = p.status.phase;
      const waiting = p.status.conditions?.some(
        (c) => c.type === 'ProviderConfigured' && c.status === 'False',
      );
      if (phase !== 'Ready' && phase !== 'Unhealthy' && phase !== 'Failed' && !waiting) {
        return false;
      }
    }
    return true;
  }

  /**
   * Stops GC, the monitor and the workers: no key is taken any more; the
   * reconciles in flight get `graceMs` to finish (default 0), then their
   * provider calls are aborted, and so are those of a GC pass or health
   * round under way, which leaves them to be resumed by the next run (a
   * repeated Create adopts its instance, a repeated Delete finds it gone).
   * Resolves once no reconcile, GC pass or health round runs.
   */
  async stop(opts: { graceMs?: number | undefined } = {}): Promise<void> {
    this.#unwatch?.();
    for (const t of this.#timers) clearInterval(t);
    const drained = this.queue.shutdown();
    const grace = opts.graceMs ?? 0;
    if (grace > 0 && this.queue.inFlight > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([drained, new Promise((r) => (timer = setTimeout(r, grace)))]);
      clearTimeout(timer);
    }
    this.#abort.abort(new Error('operator stopping'));
    await this.probes?.stop();
    await drained;
    await Promise.allSettled([...this.#tasks]);
  }
}
