/**
 * The Proxy reconciler: one level-based pass over one Proxy, from the store's
 * cache to the provider and back into the status, traced as one span. The
 * steps of a pass are in `pass.ts`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { isSpanContextValid, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { errorClassOf, type Logger, silentLogger } from '@proxy-op/contract';
import type { Settings } from '../defaults.js';
import type { ProviderSet } from '../providers/set.js';
import { withDeadline } from '../runtime/deadline.js';
import { messageOf } from '../runtime/message.js';
import { Backoff, type ReconcileResult } from '../runtime/queue.js';
import { type CredentialStore, MemoryCredentialStore } from '../store/credentials.js';
import type { ProxyStore } from '../store/proxies.js';
import { ReconcilePass } from './pass.js';
import type { DataPlane, PassEnv } from './step.js';

/** The settings the reconciler uses (see the package README's flag table). */
export type ReconcilerSettings = Pick<
  Settings,
  | 'deletionPollMs'
  | 'provisioningPollMs'
  | 'readyResyncMs'
  | 'quotaBackoffBaseMs'
  | 'quotaBackoffMaxMs'
  | 'backoffJitter'
  | 'callTimeoutMs'
>;

/** What the reconciler is built with. */
export interface ReconcilerDeps {
  /** Where the Proxies are read and their status written. */
  readonly store: ProxyStore;
  /** The configured providers. */
  readonly providers: ProviderSet;
  /** Where the reconciler logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The tracer for reconcile spans; the global one when omitted. */
  readonly tracer?: Tracer | undefined;
  /** The clock; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
  /** The random source of the quota backoff's jitter (`Math.random` by default), for tests. */
  readonly random?: (() => number) | undefined;
  /** Aborts provider calls in flight at shutdown. */
  readonly signal?: AbortSignal | undefined;
  /** The probes of the data plane (Ready then needs a passed probe); none: probing is off. */
  readonly probes?: DataPlane | undefined;
  /** Where the Proxies' credentials are kept; in memory when omitted (lost at exit). */
  readonly credentials?: CredentialStore | undefined;
}

const ID_PREFIX = randomBytes(8).toString('hex');
let idCounter = 0;

/** Log correlation ids for a pass when no OpenTelemetry SDK gives real ones: unique per process run. */
function localIds(): { traceId: string; spanId: string } {
  idCounter++;
  const n = idCounter.toString(16).padStart(16, '0');
  return { traceId: `${ID_PREFIX}${n}`, spanId: n };
}

/**
 * Reconciles Proxies one key at a time (the work queue guarantees a key is
 * never reconciled twice at once). See the package README for the rules.
 */
export class Reconciler {
  readonly #store: ProxyStore;
  readonly #log: Logger;
  readonly #tracer: Tracer;
  readonly #now: () => Date;
  readonly #quota: Backoff;
  readonly #env: PassEnv;

  constructor(deps: ReconcilerDeps, settings: ReconcilerSettings) {
    this.#store = deps.store;
    this.#log = deps.logger ?? silentLogger;
    this.#tracer = deps.tracer ?? trace.getTracer('@proxy-op/operator');
    this.#now = deps.now ?? (() => new Date());
    this.#quota = new Backoff({
      baseMs: settings.quotaBackoffBaseMs,
      maxMs: settings.quotaBackoffMaxMs,
      jitter: settings.backoffJitter,
      ...(deps.random ? { random: deps.random } : {}),
    });
    const callTimeoutMs = settings.callTimeoutMs;
    const signal = deps.signal;
    this.#env = {
      store: deps.store,
      providers: deps.providers,
      quota: this.#quota,
      deletionPollMs: settings.deletionPollMs,
      provisioningPollMs: settings.provisioningPollMs,
      readyResyncMs: settings.readyResyncMs,
      probes: deps.probes,
      credentials: deps.credentials ?? new MemoryCredentialStore(),
      call: (fn) => withDeadline(callTimeoutMs, signal, fn),
    };
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

  /** The steps of one pass, in the order of the reconcile rules. */
  async #reconcile(key: string, ids: Record<string, string>): Promise<ReconcileResult> {
    const obj = this.#store.get(key);
    if (obj === undefined) {
      this.#quota.forget(key);
      return {};
    }
    const log = this.#log.child({ proxy: key, ...ids });
    const pass = new ReconcilePass(this.#env, key, obj, log, this.#now());
    if (obj.metadata.deletionTimestamp !== undefined) return pass.finalize();
    await pass.ensureFinalizer();
    const cp = await pass.provider();
    if (cp === undefined) return {};
    const waiting = await pass.credentials(cp);
    if (waiting !== undefined) return waiting;
    const spec = await pass.render(cp);
    if (spec === undefined) return {};
    try {
      const replacing = await pass.replace(cp, spec.hash);
      if (replacing !== undefined) return replacing;
      if (await pass.latched(spec.hash)) return {};
      const providerID = await pass.ensureInstance(cp, spec);
      return await pass.observe(cp, providerID);
    } catch (err) {
      return pass.fail(err, spec.hash);
    }
  }
}
