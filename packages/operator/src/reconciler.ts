/**
 * The Proxy reconciler: one level-based pass over one Proxy, from the store's
 * cache to the provider and back into the status.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { isSpanContextValid, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import {
  type ErrorClass,
  errorClassOf,
  isNotFound,
  isPermanent,
  type Logger,
  silentLogger,
} from '@proxy-op/contract';
import { canonicalJson, renderCloudInit, specHash } from './cloudinit.js';
import { setCondition } from './conditions.js';
import { instanceName } from './naming.js';
import type { ConfiguredProvider, ProviderSet } from './providers.js';
import { Backoff, type ReconcileResult } from './queue.js';
import { FINALIZER, type ProxyObject, type ProxyStatus } from './schema.js';
import type { EventType, ProxyStore } from './store.js';

/** Timings of the reconciler, in milliseconds. */
export interface ReconcilerOptions {
  /** How often a `returns-early` deletion is polled with Get (default 5000). */
  readonly deletionPollMs?: number | undefined;
  /** How often a provisioning instance is polled (default 10000). */
  readonly provisioningPollMs?: number | undefined;
  /** How often a Ready Proxy is checked again (default 300000). */
  readonly readyResyncMs?: number | undefined;
  /** The first retry after QuotaExceeded (default 60000). */
  readonly quotaBackoffBaseMs?: number | undefined;
  /** The longest wait after QuotaExceeded (default 900000). */
  readonly quotaBackoffMaxMs?: number | undefined;
  /** The deadline of each provider call (default 120000). */
  readonly callTimeoutMs?: number | undefined;
}

/** What the reconciler is built with. */
export interface ReconcilerDeps {
  readonly store: ProxyStore;
  readonly providers: ProviderSet;
  readonly logger?: Logger | undefined;
  readonly tracer?: Tracer | undefined;
  readonly now?: (() => Date) | undefined;
  readonly random?: (() => number) | undefined;
  /** Aborts provider calls in flight at shutdown. */
  readonly signal?: AbortSignal | undefined;
}

type MutableStatus = { -readonly [K in keyof ProxyStatus]: ProxyStatus[K] };

const DEFAULTS = {
  deletionPollMs: 5000,
  provisioningPollMs: 10_000,
  readyResyncMs: 300_000,
  quotaBackoffBaseMs: 60_000,
  quotaBackoffMaxMs: 900_000,
  callTimeoutMs: 120_000,
} as const;

const ID_PREFIX = randomBytes(8).toString('hex');
let idCounter = 0;

/** Log correlation ids for a pass when no OpenTelemetry SDK gives real ones: unique per process run. */
function localIds(): { traceId: string; spanId: string } {
  idCounter++;
  const n = idCounter.toString(16).padStart(16, '0');
  return { traceId: `${ID_PREFIX}${n}`, spanId: n };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reconciles Proxies one key at a time (the work queue guarantees a key is
 * never reconciled twice at once). See the package README for the rules.
 */
export class Reconciler {
  readonly #store: ProxyStore;
  readonly #providers: ProviderSet;
  readonly #log: Logger;
  readonly #tracer: Tracer;
  readonly #now: () => Date;
  readonly #opts: { -readonly [K in keyof typeof DEFAULTS]: number };
  readonly #quota: Backoff;
  readonly #signal: AbortSignal | undefined;

  constructor(deps: ReconcilerDeps, opts: ReconcilerOptions = {}) {
    this.#store = deps.store;
    this.#providers = deps.providers;
    this.#log = deps.logger ?? silentLogger;
    this.#tracer = deps.tracer ?? trace.getTracer('@proxy-op/operator');
    this.#now = deps.now ?? (() => new Date());
    this.#opts = { ...DEFAULTS };
    for (const [k, v] of Object.entries(opts)) {
      if (v !== undefined) (this.#opts as Record<string, unknown>)[k] = v;
    }
    this.#signal = deps.signal;
    this.#quota = new Backoff({
      baseMs: this.#opts.quotaBackoffBaseMs,
      maxMs: this.#opts.quotaBackoffMaxMs,
      ...(deps.random ? { random: deps.random } : {}),
    });
  }

  /** One reconcile pass for `key` (`namespace/name`). Throws to ask for a retry with backoff. */
  reconcile(key: string): Promise<ReconcileResult> {
    return this.#tracer.startActiveSpan(
      'proxy.reconcile',
      { attributes: { 'proxy_op.proxy': key } },
      async (span) => {
        try {
          const ctx = span.spanContext();
          // Without an OpenTelemetry SDK the span is a no-op: give the pass's log lines
          // ids of their own so they can still be told apart and grouped.
          const ids = isSpanContextValid(ctx) ? {} : localIds();
          return await this.#reconcile(key, ids);
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(err) });
          span.setAttribute('proxy_op.error.class', errorClassOf(err));
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  /**
   * Runs one provider call with the call deadline and the shutdown signal.
   * The timer is cleared when the call settles: a burst of reconciles leaves
   * no timers (nor signals) behind for the length of the deadline.
   */
  async #call<T>(fn: (opts: { signal: AbortSignal }) => Promise<T>): Promise<T> {
    const ac = new AbortController();
    const ms = this.#opts.callTimeoutMs;
    const timer = setTimeout(
      () => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      ms,
    );
    const stop = this.#signal;
    const onStop = () => ac.abort(stop?.reason);
    if (stop?.aborted) onStop();
    else stop?.addEventListener('abort', onStop, { once: true });
    try {
      return await fn({ signal: ac.signal });
    } finally {
      clearTimeout(timer);
      stop?.removeEventListener('abort', onStop);
    }
  }

  async #write(key: string, before: ProxyStatus, st: MutableStatus): Promise<void> {
    if (canonicalJson(before) === canonicalJson(st)) return;
    await this.#store.updateStatus(key, { ...st });
  }

  async #reconcile(key: string, ids: Record<string, string>): Promise<ReconcileResult> {
    const obj = this.#store.get(key);
    if (obj === undefined) {
      this.#quota.forget(key);
      return {};
    }
    const log = this.#log.child({ proxy: key, ...ids });
    const before = obj.status;
    const st: MutableStatus = structuredClone(obj.status) as MutableStatus;
    const now = this.#now();
    const gen = obj.metadata.generation;
    st.observedGeneration = gen;
    const cond = (
      type: 'Ready' | 'ProviderConfigured' | 'Latched' | 'QuotaExceeded',
      status: 'True' | 'False',
      reason: string,
      message: string,
    ) => {
      st.conditions = setCondition(
        st.conditions,
        { type, status, reason, message, observedGeneration: gen },
        now,
      );
    };

    if (obj.metadata.deletionTimestamp !== undefined) {
      return this.#finalize(key, obj, before, st, cond, log);
    }
    if (!obj.metadata.finalizers.includes(FINALIZER)) {
      await this.#store.addFinalizer(key, FINALIZER);
    }
    const cp = this.#providers.get(obj.spec.provider);
    if (cp === undefined) {
      const msg = `no provider named "${obj.spec.provider}" is configured; waiting for the providers file to name it`;
      cond('ProviderConfigured', 'False', 'ProviderNotConfigured', msg);
      cond('Ready', 'False', 'ProviderNotConfigured', msg);
      if (st.providerID === undefined) st.phase = 'Pending';
      await this.#write(key, before, st);
      return {};
    }
    cond('ProviderConfigured', 'True', 'Configured', `provider ${cp.name} (${cp.type})`);
    let hash: string;
    try {
      hash = specHash(obj.spec);
    } catch (err) {
      // A source the CRD's pattern let through but Squid could not be given.
      const msg = `spec: ${(err as Error).message}`;
      cond('Ready', 'False', 'InvalidSpec', msg);
      await this.#write(key, before, st);
      return {};
    }
    try {
      // Replace when the spec changed under an existing instance.
      if (st.providerID !== undefined && st.specHash !== undefined && st.specHash !== hash) {
        const holder = this.#holder(st, cp);
        if (holder === undefined) {
          cond(
            'Ready',
            'False',
            'ProviderNotConfigured',
            `provider ${st.instanceProvider} is gone`,
          );
          await this.#write(key, before, st);
          return {};
        }
        if (st.phase !== 'Replacing') {
          this.#event(
            key,
            'Normal',
            'Replacing',
            `the spec changed; replacing instance ${st.providerID}`,
          );
        }
        st.phase = 'Replacing';
        cond('Ready', 'False', 'Replacing', 'the spec changed; replacing the instance');
        if (!(await this.#deleteInstance(holder, st.providerID, obj.metadata.uid))) {
          await this.#write(key, before, st);
          return { requeueAfter: this.#opts.deletionPollMs };
        }
        log.info({ providerID: st.providerID }, 'old instance deleted for the new spec');
        this.#clearInstance(st);
        await this.#store.updateStatus(key, { ...st });
      }
      // Latched: a Permanent error for this spec; nothing until it changes.
      if (st.latchedSpecHash === hash) {
        await this.#write(key, before, st);
        return {};
      }
      if (st.latchedSpecHash !== undefined) {
        delete st.latchedSpecHash;
        cond('Latched', 'False', 'SpecChanged', 'the spec changed; trying again');
      }
      if (st.providerID === undefined) {
        if (st.phase !== 'Replacing') st.phase = 'Provisioning';
        const { namespace, name, uid } = obj.metadata;
        const id = await this.#call((o) =>
          cp.provider.create(
            {
              name: instanceName(namespace, name),
              namespace,
              uid,
              port: obj.spec.port,
              cloudInit: new TextEncoder().encode(renderCloudInit(obj.spec)),
              placement: obj.spec.placement,
              allowedSources: obj.spec.allowedSources,
              installation: this.#providers.installation,
            },
            o,
          ),
        );
        st.providerID = id;
        st.instanceProvider = cp.name;
        st.specHash = hash;
        await this.#store.updateStatus(key, { ...st });
        log.info({ providerID: id }, 'instance created');
        this.#event(key, 'Normal', 'Created', `created instance ${id} on provider ${cp.name}`);
      } else {
        st.specHash ??= hash;
        st.instanceProvider ??= cp.name;
      }
      let inst: Awaited<ReturnType<typeof cp.provider.get>>;
      try {
        const providerID = st.providerID;
        inst = await this.#call((o) => cp.provider.get(providerID, o));
      } catch (err) {
        if (!isNotFound(err)) throw err;
        log.warn({ providerID: st.providerID }, 'instance vanished; creating it again');
        this.#event(
          key,
          'Warning',
          'InstanceVanished',
          `instance ${st.providerID} disappeared; creating it again`,
        );
        this.#clearInstance(st);
        st.phase = 'Provisioning';
        cond('Ready', 'False', 'InstanceVanished', 'the instance disappeared; creating it again');
        await this.#write(key, before, st);
        return { requeueAfter: 0 };
      }
      if (inst.state !== undefined) st.instanceState = inst.state;
      else delete st.instanceState;
      if (inst.state === 'Stopped' || inst.state === 'Terminated') {
        if (st.phase !== 'Replacing') {
          this.#event(
            key,
            'Normal',
            'Replacing',
            `instance ${st.providerID} is ${inst.state}; replacing it`,
          );
        }
        st.phase = 'Replacing';
        cond('Ready', 'False', 'Replacing', `the instance is ${inst.state}; replacing it`);
        if (!(await this.#deleteInstance(cp, st.providerID, obj.metadata.uid))) {
          await this.#write(key, before, st);
          return { requeueAfter: this.#opts.deletionPollMs };
        }
        log.info({ providerID: st.providerID, state: inst.state }, 'stopped instance deleted');
        this.#clearInstance(st);
        await this.#write(key, before, st);
        return { requeueAfter: 0 };
      }
      delete st.lastError;
      if (this.#quota.failures(key) > 0) {
        this.#quota.forget(key);
        cond('QuotaExceeded', 'False', 'QuotaAvailable', 'the provider accepted the instance');
      }
      if (inst.state === 'Running' && inst.ip !== undefined) {
        st.phase = 'Ready';
        st.ip = inst.ip;
        st.endpoint = `http://${inst.ip.includes(':') ? `[${inst.ip}]` : inst.ip}:${obj.spec.port}`;
        cond('Ready', 'True', 'Running', `serving at ${st.endpoint}`);
        await this.#write(key, before, st);
        return { requeueAfter: this.#opts.readyResyncMs };
      }
      st.phase = 'Provisioning';
      delete st.ip;
      delete st.endpoint;
      cond('Ready', 'False', 'Provisioning', 'the instance is starting');
      await this.#write(key, before, st);
      return { requeueAfter: this.#opts.provisioningPollMs };
    } catch (err) {
      return this.#onError(key, before, st, hash, err, cond, log);
    }
  }

  #event(key: string, type: EventType, reason: string, message: string): void {
    this.#store.recordEvent?.(key, type, reason, message);
  }

  #holder(st: MutableStatus, current: ConfiguredProvider): ConfiguredProvider | undefined {
    if (st.instanceProvider === undefined || st.instanceProvider === current.name) return current;
    return this.#providers.get(st.instanceProvider);
  }

  #clearInstance(st: MutableStatus): void {
    delete st.providerID;
    delete st.instanceProvider;
    delete st.specHash;
    delete st.ip;
    delete st.endpoint;
    delete st.instanceState;
  }

  /**
   * Deletes the Proxy's instance; true when it is gone (for `returns-early`
   * providers, once Get says NotFound). The Proxy's UID goes with it, so an
   * instance another Proxy took the name of is left alone.
   */
  async #deleteInstance(cp: ConfiguredProvider, id: string, uid: string): Promise<boolean> {
    try {
      await this.#call((o) => cp.provider.delete(id, { ...o, uid }));
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
    if (cp.module.profile.deleteReturn !== 'returns-early') return true;
    try {
      await this.#call((o) => cp.provider.get(id, o));
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  async #finalize(
    key: string,
    obj: ProxyObject,
    before: ProxyStatus,
    st: MutableStatus,
    cond: (t: 'Ready' | 'ProviderConfigured', s: 'True' | 'False', r: string, m: string) => void,
    log: Logger,
  ): Promise<ReconcileResult> {
    if (!obj.metadata.finalizers.includes(FINALIZER)) return {};
    if (st.providerID !== undefined) {
      const holderName = st.instanceProvider ?? obj.spec.provider;
      const cp = this.#providers.get(holderName);
      st.phase = 'Deleting';
      if (cp === undefined) {
        cond(
          'ProviderConfigured',
          'False',
          'ProviderNotConfigured',
          `provider "${holderName}" holds the instance but is not configured; waiting for it to delete the instance`,
        );
        await this.#write(key, before, st);
        return {};
      }
      let gone: boolean;
      try {
        gone = await this.#deleteInstance(cp, st.providerID, obj.metadata.uid);
      } catch (err) {
        if (isPermanent(err)) {
          log.warn(
            { providerID: st.providerID, err: messageOf(err) },
            'the recorded instance ID is refused as Permanent; counting it as nothing to delete',
          );
          gone = true;
        } else {
          st.lastError = { class: errorClassOf(err), message: messageOf(err) };
          await this.#write(key, before, st);
          throw err;
        }
      }
      if (!gone) {
        await this.#write(key, before, st);
        return { requeueAfter: this.#opts.deletionPollMs };
      }
      log.info({ providerID: st.providerID }, 'instance deleted; releasing the Proxy');
      this.#event(key, 'Normal', 'Deleted', `deleted instance ${st.providerID}`);
    }
    await this.#store.removeFinalizer(key, FINALIZER);
    this.#quota.forget(key);
    return {};
  }

  async #onError(
    key: string,
    before: ProxyStatus,
    st: MutableStatus,
    hash: string,
    err: unknown,
    cond: (
      t: 'Ready' | 'Latched' | 'QuotaExceeded',
      s: 'True' | 'False',
      r: string,
      m: string,
    ) => void,
    log: Logger,
  ): Promise<ReconcileResult> {
    const cls: ErrorClass = errorClassOf(err);
    const message = messageOf(err);
    st.lastError = { class: cls, message };
    if (cls === 'Permanent') {
      st.latchedSpecHash = hash;
      st.phase = 'Failed';
      cond('Latched', 'True', 'PermanentError', message);
      cond('Ready', 'False', 'PermanentError', message);
      await this.#write(key, before, st);
      log.warn({ err: message }, 'permanent provider error; latched until the spec changes');
      this.#event(
        key,
        'Warning',
        'Latched',
        `permanent provider error, nothing more is tried until the spec changes: ${message}`,
      );
      return {};
    }
    if (cls === 'QuotaExceeded') {
      cond('QuotaExceeded', 'True', 'QuotaExceeded', message);
      cond('Ready', 'False', 'QuotaExceeded', message);
      await this.#write(key, before, st);
      const ms = this.#quota.next(key);
      log.info({ err: message, retryInMs: ms }, 'provider quota exceeded; retrying later');
      return { requeueAfter: ms };
    }
    await this.#write(key, before, st);
    throw err;
  }
}
