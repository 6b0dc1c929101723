/**
 * The Proxy controller: the work queue of Proxy keys, fed by the store's
 * changes and the data plane's, and its workers running the reconciler;
 * with the counts the operator reports of it (Proxies by phase, keys
 * waiting) and what "settled" means.
 *
 * @module
 */
import type { Meter, Tracer } from '@opentelemetry/api';
import type { Logger } from '@proxy-op/contract';
import { POOL_LABEL } from '../api/pool.js';
import type { Phase } from '../api/proxy.js';
import type { Settings } from '../defaults.js';
import type { ProviderSet, ProvidersChange } from '../providers/set.js';
import { messageOf } from '../runtime/message.js';
import { WorkQueue } from '../runtime/queue.js';
import type { CredentialStore } from '../store/credentials.js';
import { type ProxyStore, proxyKey } from '../store/proxies.js';
import { Reconciler, type ReconcilerSettings } from './reconciler.js';
import type { DataPlane } from './step.js';

/** The settings the controller uses: its workers and their backoff, and the reconciler's. */
export type ProxyControllerSettings = ReconcilerSettings &
  Pick<Settings, 'workers' | 'backoffBaseMs' | 'backoffMaxMs'>;

/** What the controller is built with. */
export interface ProxyControllerDeps {
  /** Where the Proxies are read and their status written. */
  readonly store: ProxyStore;
  /** The configured providers. */
  readonly providers: ProviderSet;
  /** Where the Proxies' credentials are kept. */
  readonly credentials: CredentialStore;
  /** The probes of the data plane; none: probing is off. */
  readonly probes: DataPlane | undefined;
  readonly logger: Logger;
  readonly tracer: Tracer | undefined;
  readonly meter: Meter;
  readonly now: () => Date;
  /** The random source of the backoff jitter. */
  readonly random: (() => number) | undefined;
  /** Aborts the provider calls of the reconciles in flight (the operator's stop). */
  readonly signal: AbortSignal;
}

/** Reconciles Proxies on N workers over the store's keys. */
export class ProxyController {
  /** The work queue of Proxy keys. */
  readonly queue: WorkQueue;
  /** The reconciler the workers run. */
  readonly reconciler: Reconciler;
  readonly #store: ProxyStore;
  #unwatch: (() => void) | undefined;
  #drained: Promise<void> | undefined;

  constructor(deps: ProxyControllerDeps, settings: ProxyControllerSettings) {
    this.#store = deps.store;
    const log = deps.logger;
    const reconciles = deps.meter.createCounter('proxy_op.reconcile.total', {
      description: 'Reconcile passes by outcome',
    });
    const duration = deps.meter.createHistogram('proxy_op.reconcile.duration', {
      description: 'Reconcile pass duration',
      unit: 's',
    });
    this.queue = new WorkQueue({
      workers: settings.workers,
      backoff: {
        baseMs: settings.backoffBaseMs,
        maxMs: settings.backoffMaxMs,
        jitter: settings.backoffJitter,
        ...(deps.random !== undefined ? { random: deps.random } : {}),
      },
      onError: (key, err, retryInMs) => {
        log.warn({ proxy: key, err: messageOf(err), retryInMs }, 'reconcile failed');
      },
      onDone: (_key, ms, outcome) => {
        reconciles.add(1, { outcome });
        duration.record(ms / 1000, { outcome });
      },
    });
    this.reconciler = new Reconciler(
      {
        store: deps.store,
        providers: deps.providers,
        logger: deps.logger,
        tracer: deps.tracer,
        now: deps.now,
        random: deps.random,
        signal: deps.signal,
        probes: deps.probes,
        credentials: deps.credentials,
      },
      settings,
    );
    deps.meter
      .createObservableGauge('proxy_op.proxies', { description: 'Proxies by phase' })
      .addCallback((r) => {
        for (const [phase, n] of Object.entries(this.phases())) r.observe(n, { phase });
      });
    deps.meter
      .createObservableGauge('proxy_op.cost.per_hour', {
        description:
          "What the Proxies cost per hour now, from their providers' prices in the providers file",
      })
      .addCallback((r) => {
        for (const [key, perHour] of this.costs()) {
          const [pool, provider, currency] = key.split('\0') as [string, string, string];
          r.observe(perHour, { pool, provider, currency });
        }
      });
    deps.meter
      .createObservableGauge('proxy_op.queue.depth', {
        description: 'Keys waiting in the work queue',
      })
      .addCallback((r) => r.observe(this.queue.length));
  }

  /** Starts the workers and queues every Proxy, and every one that changes from now on. */
  start(): void {
    this.#unwatch = this.#store.watch((key) => this.queue.add(key));
    this.queue.start((key) => this.reconciler.reconcile(key));
    this.enqueueAll();
  }

  /** Queues every Proxy in the store. */
  enqueueAll(): void {
    for (const p of this.#store.list()) {
      this.queue.add(proxyKey(p.metadata.namespace, p.metadata.name));
    }
  }

  /** Queues the Proxies a providers change concerns. */
  enqueueFor(change: ProvidersChange): void {
    const touched = new Set([
      ...change.added,
      ...change.rebuilt,
      ...change.removed,
      ...change.probeChanged,
    ]);
    for (const p of this.#store.list()) {
      if (
        change.installationChanged ||
        touched.has(p.spec.provider) ||
        (p.status.instanceProvider !== undefined && touched.has(p.status.instanceProvider))
      ) {
        this.queue.add(proxyKey(p.metadata.namespace, p.metadata.name));
      }
    }
  }

  /** Proxies counted by phase (`Pending` for a Proxy with no phase yet). */
  /**
   * What the Proxies cost per hour now, by `pool\0provider\0currency` (the
   * pool `NAMESPACE/NAME`, or '' for a Proxy of none); Proxies without
   * `status.cost` are left out.
   */
  costs(): Map<string, number> {
    const out = new Map<string, number>();
    for (const p of this.#store.list()) {
      const c = p.status.cost;
      if (c === undefined) continue;
      const owner = p.metadata.labels?.[POOL_LABEL];
      const pool = owner === undefined ? '' : `${p.metadata.namespace}/${owner}`;
      const key = `${pool}\0${p.status.instanceProvider ?? p.spec.provider}\0${c.currency}`;
      out.set(key, (out.get(key) ?? 0) + c.perHour);
    }
    return out;
  }

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
    for (const p of this.#store.list()) {
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
    for (const p of this.#store.list()) {
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
   * Takes no key any more and waits up to `graceMs` for the reconciles in
   * flight; {@link ProxyController.drained} then waits for the rest (once
   * the operator has aborted their provider calls).
   */
  async quiesce(graceMs: number): Promise<void> {
    this.#unwatch?.();
    this.#drained ??= this.queue.shutdown();
    if (graceMs > 0 && this.queue.inFlight > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.#drained, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
    }
  }

  /** Resolves once no reconcile runs (after {@link ProxyController.quiesce}). */
  async drained(): Promise<void> {
    await (this.#drained ?? this.queue.shutdown());
  }
}
