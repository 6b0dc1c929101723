/**
 * The operator as one piece: everything it runs, assembled from one
 * options object over the stores a run mode chose (a folder and a state
 * file, or the Kubernetes API): the Proxy controller, the probes of the
 * data plane, the pool controller and the pools' gateways, garbage
 * collection, the health monitor, and the status page's data. The settings
 * get their defaults here, once, and each part takes them under the names
 * the flags and `DEFAULTS` give them.
 *
 * @module
 */
import { type Meter, metrics, type Tracer } from '@opentelemetry/api';
import { type Logger, silentLogger } from '@proxy-op/contract';
import type { ProbeTargetSpec } from '@proxy-op/probe';
import type { Phase, ProviderHealth } from '../api/proxy.js';
import { type Settings, withDefaults } from '../defaults.js';
import { EventLog } from '../page/events.js';
import type { StatusPage } from '../page/server.js';
import { PoolController } from '../pool/controller.js';
import type { PoolGateways } from '../pool/gateway.js';
import { ProbeScheduler } from '../probe/scheduler.js';
import type { ProvidersConfig } from '../providers/file.js';
import { ProviderSet, type ProvidersChange } from '../providers/set.js';
import { ProxyController } from '../proxy/controller.js';
import { collectAll, type GcReport } from '../proxy/gc.js';
import { healthRound } from '../proxy/health.js';
import { messageOf } from '../runtime/message.js';
import { Periodic } from '../runtime/periodic.js';
import type { WorkQueue } from '../runtime/queue.js';
import { type CredentialStore, MemoryCredentialStore } from '../store/credentials.js';
import type { PoolStore } from '../store/pools.js';
import { hookStore, type ProxyStore } from '../store/proxies.js';

/** What an {@link Operator} is made of: the stores, the settings, and where it reports. */
export interface OperatorOptions {
  /** Where the Proxies and ProviderHealth are read and written. */
  readonly store: ProxyStore;
  /** Where the ProxyPools are; without it no pool is reconciled. */
  readonly pools?: PoolStore | undefined;
  /** Where the Proxies' credentials are kept; in memory when omitted (lost at exit). */
  readonly credentials?: CredentialStore | undefined;
  /** Where the pools' gateways run; without it `spec.gateway` is reported as not served. */
  readonly gateways?: PoolGateways | undefined;
  /** The configured providers; an empty set (given some by {@link Operator.applyProviders}) when omitted. */
  readonly providers?: ProviderSet | undefined;
  /** The settings; each one left out takes its default (`DEFAULTS`). */
  readonly settings?: Partial<Settings> | undefined;
  /**
   * The operator's own whoami target (`run` starts one). Without it, only
   * providers whose `probe.url` names a target are probed.
   */
  readonly probeTarget?: ProbeTargetSpec | undefined;
  /** A status page to give the operator's data to (and keep the Events it shows). */
  readonly page?: StatusPage | undefined;
  /** Where the operator logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The tracer of the reconcile and probe spans; the global one when omitted. */
  readonly tracer?: Tracer | undefined;
  /** The meter of the operator's metrics; the global one when omitted. */
  readonly meter?: Meter | undefined;
  /** The clock; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
  /** The random source of the jitters (`Math.random` by default), for tests. */
  readonly random?: (() => number) | undefined;
}

/**
 * The operator: reconciles the Proxies (and, given a pool store, the
 * ProxyPools) of its stores through the configured providers, probes their
 * data plane, collects orphans every GC interval and checks the providers
 * every health interval.
 */
export class Operator {
  /** The settings, defaults applied. */
  readonly settings: Settings;
  /** The configured providers. */
  readonly providers: ProviderSet;
  /** The Proxy store as the controllers write it (a status write queues its pool; Events kept for the page). */
  readonly store: ProxyStore;
  /** The Proxy controller. */
  readonly proxies: ProxyController;
  /** The pool controller; undefined without a pool store. */
  readonly pools: PoolController | undefined;
  /** The probes of the data plane; undefined when probing is off (`probeIntervalMs: 0`). */
  readonly probes: ProbeScheduler | undefined;
  /** The Events the status page shows; undefined without a page. */
  readonly events: EventLog | undefined;
  readonly #o: OperatorOptions;
  readonly #log: Logger;
  readonly #now: () => Date;
  /** The stop signal: aborts the provider calls of reconciles, GC and health checks in flight. */
  readonly #abort = new AbortController();
  readonly #periodic: Periodic;
  readonly #gcCounter;
  #started = false;
  /** Who hears of each status write, as it is made. */
  readonly #written = new Set<(key: string) => void>();

  constructor(o: OperatorOptions) {
    this.#o = o;
    const settings = withDefaults(o.settings);
    this.settings = settings;
    const logger = o.logger ?? silentLogger;
    this.#log = logger;
    this.#now = o.now ?? (() => new Date());
    this.#periodic = new Periodic(logger);
    const meter = o.meter ?? metrics.getMeter('@proxy-op/operator');
    this.providers = o.providers ?? new ProviderSet({ logger, meter: o.meter });
    const credentials = o.credentials ?? new MemoryCredentialStore();

    if (o.pools !== undefined) {
      this.pools = new PoolController(
        {
          pools: o.pools,
          proxies: o.store,
          providers: this.providers,
          credentials,
          gateways: o.gateways,
          logger,
          now: o.now,
        },
        settings,
      );
    }
    let store = hookStore(this.pools?.observe(o.store) ?? o.store, {
      afterStatus: (key) => {
        for (const l of this.#written) l(key);
      },
    });
    if (o.page !== undefined) {
      const seen = store;
      this.events = new EventLog({
        statusEventsPerProxy: settings.statusEventsPerProxy,
        exists: (key) => seen.get(key) !== undefined,
      });
      store = this.events.wrap(seen);
    }
    this.store = store;

    // The probes queue a Proxy whose data plane changed; the controller is made just below.
    let controller: ProxyController | undefined;
    if (settings.probeIntervalMs > 0) {
      this.probes = new ProbeScheduler(
        {
          store,
          target: o.probeTarget,
          onChange: (key) => controller?.queue.add(key),
          logger,
          tracer: o.tracer,
          meter,
          now: o.now,
          random: o.random,
        },
        settings,
      );
    }
    controller = new ProxyController(
      {
        store,
        providers: this.providers,
        credentials,
        probes: this.probes,
        logger,
        tracer: o.tracer,
        meter,
        now: this.#now,
        random: o.random,
        signal: this.#abort.signal,
      },
      settings,
    );
    this.proxies = controller;
    this.#gcCounter = meter.createCounter('proxy_op.gc.deletions', {
      description: 'Orphaned instances GC deleted (or, in a dry run, would delete)',
    });
    meter
      .createObservableGauge('proxy_op.provider.ready', {
        description: '1 when every target of a provider is ready',
      })
      .addCallback((r) => {
        for (const h of o.store.listHealth())
          r.observe(h.status.ready ? 1 : 0, { provider: h.name });
      });
    o.page?.serve({
      store,
      providers: this.providers,
      probes: this.probes,
      events: this.events,
      pools: o.pools,
    });
  }

  /** The Proxy controller's work queue. */
  get queue(): WorkQueue {
    return this.proxies.queue;
  }

  /**
   * Calls `listener` with the key of each Proxy whose status is written, as
   * the write is made (the status it reads then is the one written); returns
   * what stops it.
   */
  onStatusWritten(listener: (key: string) => void): () => void {
    this.#written.add(listener);
    return () => this.#written.delete(listener);
  }

  /** Starts the controllers (every Proxy and pool queued), GC and the health monitor. */
  start(): void {
    if (this.#started) throw new Error('Operator: already started');
    this.#started = true;
    this.proxies.start();
    this.pools?.start();
    const { gcIntervalMs, healthIntervalMs } = this.settings;
    if (gcIntervalMs > 0) this.#periodic.every(gcIntervalMs, () => this.runGc());
    if (healthIntervalMs > 0) {
      this.#periodic.background(this.runHealth());
      this.#periodic.every(healthIntervalMs, () => this.runHealth());
    }
  }

  /**
   * Applies a new providers config (only changed providers are rebuilt) and
   * queues the Proxies the change concerns.
   */
  async applyProviders(config: ProvidersConfig): Promise<ProvidersChange & { problems: string[] }> {
    const change = await this.providers.apply(config);
    for (const name of change.removed) {
      await this.#o.store.deleteHealth(name).catch((err: unknown) => {
        this.#log.error(
          { provider: name, err: messageOf(err) },
          'deleting the ProviderHealth of a removed provider failed',
        );
      });
    }
    if (this.#started) {
      this.proxies.enqueueFor(change);
      const touched =
        change.added.length +
        change.rebuilt.length +
        change.removed.length +
        change.probeChanged.length;
      if (touched > 0) this.#periodic.background(this.runHealth());
    }
    this.#log.info(
      { added: change.added, rebuilt: change.rebuilt, removed: change.removed, kept: change.kept },
      'providers config applied',
    );
    return change;
  }

  /** One GC pass over every provider; the operator's stop ends it. */
  runGc(): Promise<GcReport[]> {
    return this.#periodic.track(this.#gc());
  }

  async #gc(): Promise<GcReport[]> {
    const reports = await collectAll(this.providers, this.#o.store, this.settings, {
      logger: this.#log,
      now: this.#now(),
      signal: this.#abort.signal,
    });
    for (const report of reports) {
      if (report.deleted.length > 0) {
        this.#gcCounter.add(report.deleted.length, {
          provider: report.provider,
          dry_run: String(this.settings.gcDryRun),
        });
      }
    }
    return reports;
  }

  /**
   * One health round: every provider with a Checker, concurrently; writes
   * ProviderHealth. The operator's stop ends it, and a round it cut short
   * writes nothing.
   */
  runHealth(): Promise<ProviderHealth[]> {
    return this.#periodic.track(
      healthRound(
        this.providers,
        this.#o.store,
        this.settings.checkTimeoutMs,
        this.#now,
        this.#abort.signal,
      ),
    );
  }

  /** Proxies counted by phase (`Pending` for a Proxy with no phase yet). */
  phases(): Record<Phase, number> {
    return this.proxies.phases();
  }

  /**
   * True when nothing is left to do right now: no Proxy queued or in flight,
   * none being deleted, and each Ready, Unhealthy, Failed or waiting for its
   * provider, at its current generation.
   */
  settled(): boolean {
    return this.proxies.settled();
  }

  /**
   * Stops the pools, GC, the monitor and the workers: no key is taken any
   * more; the reconciles in flight get `graceMs` to finish (default 0),
   * then their provider calls are aborted, and so are those of a GC pass or
   * health round under way, which leaves them to be resumed by the next run
   * (a repeated Create adopts its instance, a repeated Delete finds it
   * gone). Resolves once nothing of the operator runs.
   */
  async stop(opts: { graceMs?: number | undefined } = {}): Promise<void> {
    this.#periodic.cancel();
    await this.pools?.stop();
    await this.#o.gateways?.stop();
    await this.proxies.quiesce(opts.graceMs ?? 0);
    this.#abort.abort(new Error('operator stopping'));
    await this.probes?.stop();
    await this.proxies.drained();
    await this.#periodic.settled();
  }
}
