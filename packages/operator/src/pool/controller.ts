/**
 * The pool controller: one reconcile per ProxyPool key, level-based like the
 * Proxy reconciler. It reads the pool and the Proxies it owns, asks
 * {@link planPool} what to do, does it (create, drain, delete), publishes the
 * verified endpoints and writes the pool's status. The Proxies it makes are
 * reconciled, probed and given credentials like any other.
 *
 * @module
 */
import { createHash, randomInt } from 'node:crypto';
import { billingOf, type Logger, silentLogger } from '@proxy-op/contract';
import { canonicalJson } from '../api/canonical-json.js';
import type { PoolEndpoint, PoolObject } from '../api/pool.js';
import { POOL_LABEL, REMEDIATE_ANNOTATION, TEMPLATE_HASH_LABEL } from '../api/pool.js';
import type { ProxyObject } from '../api/proxy.js';
import { credentialUrl } from '../credentials/credential.js';
import type { Settings } from '../defaults.js';
import type { ProviderSet } from '../providers/set.js';
import { messageOf } from '../runtime/message.js';
import { WorkQueue } from '../runtime/queue.js';
import type { CredentialStore } from '../store/credentials.js';
import type { PoolStore, PublishedEndpoints, PublishedUpstream } from '../store/pools.js';
import { hookStore, type ProxyStore, proxyKey } from '../store/proxies.js';
import { decideReplicas, paidPeriodEnd, resolveAutoscale } from './autoscale.js';
import { gatewayPlan, type PoolGateways } from './gateway.js';
import { memberOf, poolView } from './member.js';
import { planPool } from './plan.js';
import { type ResolvedPoolSpec, resolvePoolSpec } from './resolve.js';
import { poolStatus } from './status.js';

/** What the controller is built with. */
export interface PoolControllerDeps {
  /** Where the pools are read and their Proxies made. */
  readonly pools: PoolStore;
  /** Where the Proxies are read (the reconciler's store). */
  readonly proxies: ProxyStore;
  /** The configured providers, for the spread. */
  readonly providers: ProviderSet;
  /** Where the Proxies' credentials are, for the endpoint list with credentials. */
  readonly credentials?: CredentialStore | undefined;
  /** Where pools' gateways run; without it `spec.gateway` is reported as not served. */
  readonly gateways?: PoolGateways | undefined;
  /** Where the controller logs; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The clock; the system clock when omitted. */
  readonly now?: (() => Date) | undefined;
}

/** The settings the controller uses (see the package README). */
export type PoolControllerSettings = Pick<
  Settings,
  | 'poolWorkers'
  | 'backoffBaseMs'
  | 'backoffMaxMs'
  | 'backoffJitter'
  | 'remediationBackoffBaseMs'
  | 'remediationBackoffMaxMs'
  | 'refusalMemoryMs'
>;

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
/** How often an autoscaled pool's demand is read while it is at zero or work waits. */
const AUTOSCALE_QUICK_MS = 1_000;
/** How often otherwise. */
const AUTOSCALE_POLL_MS = 2_000;

/** The hash of a pool's template: the `proxy-op.io/template-hash` label of its Proxies. */
export function templateHash(pool: PoolObject): string {
  return createHash('sha256').update(canonicalJson(pool.spec.template)).digest('hex').slice(0, 10);
}

/** The Proxies `pool` owns (its UID in their owner references). */
export function membersOf(proxies: ProxyStore, pool: PoolObject): ProxyObject[] {
  return proxies
    .list()
    .filter(
      (p) =>
        p.metadata.namespace === pool.metadata.namespace &&
        p.metadata.ownerReferences?.some(
          (o) => o.kind === 'ProxyPool' && o.uid === pool.metadata.uid,
        ),
    );
}

/** The pool that owns a Proxy, as a key, if one does. */
function ownerKey(p: ProxyObject): string | undefined {
  const o = p.metadata.ownerReferences?.find((r) => r.kind === 'ProxyPool');
  return o === undefined ? undefined : proxyKey(p.metadata.namespace, o.name);
}

/** Runs the pools: watches them and their Proxies, reconciles each on a change. */
export class PoolController {
  /** The work queue of pool keys. */
  readonly queue: WorkQueue;
  readonly #deps: PoolControllerDeps;
  readonly #opts: PoolControllerSettings;
  readonly #log: Logger;
  readonly #now: () => Date;
  /**
   * Each Proxy's URL with its credential, by UID, with what it was made from
   * (endpoint, issue time, applied password file): read again only when one
   * of them changes, not once per endpoint per pass.
   */
  readonly #urls = new Map<string, { readonly from: string; readonly url: string }>();
  /**
   * Providers that latched a Proxy of a pool (`pool key \0 provider`), kept
   * for `refusalMemoryMs` after the latched Proxy was replaced, so
   * its replacement and the next ones are not sent back to them at once.
   */
  readonly #refused = new Map<string, { readonly message: string; readonly until: number }>();
  #unwatch: Array<() => void> = [];

  constructor(deps: PoolControllerDeps, settings: PoolControllerSettings) {
    this.#deps = deps;
    this.#opts = settings;
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? (() => new Date());
    this.queue = new WorkQueue({
      workers: settings.poolWorkers,
      backoff: {
        baseMs: settings.backoffBaseMs,
        maxMs: settings.backoffMaxMs,
        jitter: settings.backoffJitter,
      },
      onError: (key, err, retryInMs) =>
        this.#log.warn({ pool: key, err: messageOf(err), retryInMs }, 'pool reconcile failed'),
    });
  }

  /**
   * The Proxy store as the operator is to write it: each status write that
   * changes what a pool counts (Ready, the endpoint, the egress address, a
   * latch) queues the Proxy's pool.
   */
  observe(store: ProxyStore): ProxyStore {
    return hookStore(store, {
      afterStatus: (key, before, after) => {
        if (before !== undefined && poolView(before) === poolView(after)) return;
        const p = store.get(key);
        const owner = p === undefined ? undefined : ownerKey(p);
        if (owner !== undefined) this.queue.add(owner);
      },
    });
  }

  /** Starts the workers and queues every pool. */
  start(): void {
    const { pools, proxies } = this.#deps;
    this.#unwatch.push(pools.watchPools((key) => this.queue.add(key)));
    const gw = this.#deps.gateways?.watch((key) => this.queue.add(key));
    if (gw !== undefined) this.#unwatch.push(gw);
    this.#unwatch.push(
      proxies.watch((key) => {
        const p = proxies.get(key);
        const owner = p === undefined ? undefined : ownerKey(p);
        if (owner !== undefined) this.queue.add(owner);
      }),
    );
    this.queue.start((key) => this.reconcile(key));
    for (const p of pools.listPools())
      this.queue.add(proxyKey(p.metadata.namespace, p.metadata.name));
    // Proxies whose pool is gone (deleted while the operator was down) are found once.
    for (const p of proxies.list()) {
      const owner = ownerKey(p);
      if (owner !== undefined && pools.getPool(owner) === undefined) this.queue.add(owner);
    }
  }

  /** Stops watching and waits for the reconciles in flight. */
  async stop(): Promise<void> {
    for (const u of this.#unwatch) u();
    this.#unwatch = [];
    await this.queue.shutdown();
  }

  /** One pass over the pool `key`. */
  async reconcile(key: string): Promise<{ requeueAfter?: number } | undefined> {
    const { pools, proxies } = this.#deps;
    const pool = pools.getPool(key);
    if (pool === undefined || pool.metadata.deletionTimestamp !== undefined) {
      await this.#orphans(key, pool);
      return undefined;
    }
    const now = this.#now().getTime();
    const scale = await this.#autoscale(key, pool, now);
    const spec = resolvePoolSpec(
      scale === undefined ? pool.spec : { ...pool.spec, replicas: scale.decision.replicas },
    );
    const hash = templateHash(pool);
    const owned = membersOf(proxies, pool);
    const draining = new Map<string, number>();
    for (const d of pool.status.draining ?? []) draining.set(d.name, Date.parse(d.until));
    const members = owned.map((p) =>
      memberOf(p, draining, scale === undefined ? undefined : this.#paidUntil(p, now)),
    );
    const failing = this.#failingProviders(key, spec, owned, now);
    const backoff = pool.status.remediationBackoffUntil;
    const plan = planPool({
      spec,
      hash,
      members,
      now,
      failingProviders: failing,
      remediationBackoffUntil: backoff === undefined ? undefined : Date.parse(backoff),
    });

    const status = poolStatus({
      pool,
      spec,
      hash,
      plan,
      owned,
      draining,
      failing,
      now,
      backoffBaseMs: this.#opts.remediationBackoffBaseMs,
      backoffMaxMs: this.#opts.remediationBackoffMaxMs,
    });
    // The status (drains recorded) and the endpoint list go first, then the deletions:
    // a Proxy is out of every list before it is drained and deleted.
    const gateway = await this.#gateway(key, pool, status.endpoints?.length ?? 0);
    await pools.updatePoolStatus(key, {
      ...status,
      ...(gateway === undefined ? {} : { gateway }),
      ...(scale === undefined ? {} : { autoscale: scale.status }),
    });
    const change = scale?.decision.change;
    if (change !== undefined) {
      pools.recordPoolEvent?.(key, 'Normal', change.reason, change.message);
      this.#log.info(
        { pool: key, replicas: scale?.decision.replicas },
        `${change.reason}: ${change.message}`,
      );
    }
    await pools.publishEndpoints(pool, await this.#endpointLists(status.endpoints ?? [], owned));
    for (const name of plan.delete)
      await pools.deleteProxy(proxyKey(pool.metadata.namespace, name));
    for (const name of plan.remediated) {
      const asked = members.find((m) => m.name === name)?.remediate === true;
      const why = asked ? `carries ${REMEDIATE_ANNOTATION}` : 'was unhealthy';
      pools.recordPoolEvent?.(key, 'Normal', 'Remediating', `Proxy ${name} ${why}; it is replaced`);
    }
    for (const c of plan.create) await this.#create(pool, spec, hash, c.index);
    if (plan.create.length > 0 || plan.delete.length > 0 || plan.drain.length > 0) {
      this.#log.info(
        { pool: key, created: plan.create.length, drained: plan.drain, deleted: plan.delete },
        'pool changed',
      );
    }
    const again = [plan.requeueMs === undefined ? undefined : plan.requeueMs + 1, scale?.requeueMs]
      .filter((ms): ms is number => ms !== undefined)
      .sort((a, b) => a - b)[0];
    return again === undefined ? undefined : { requeueAfter: again };
  }

  /**
   * With `spec.autoscale`: the demand its gateway sees, the Proxies the
   * autoscaler keeps, the status it records, and when to look again (every
   * second while the pool is at zero or work waits, else every two, and at
   * the end of a scale-down wait).
   */
  async #autoscale(key: string, pool: PoolObject, now: number) {
    const a = pool.spec.autoscale;
    if (a === undefined) return undefined;
    const spec = resolveAutoscale(a);
    const demand = await this.#deps.gateways?.demand?.(key);
    const kept = pool.status.autoscale;
    const below = kept?.belowSince === undefined ? undefined : Date.parse(kept.belowSince);
    const decision = decideReplicas(
      spec,
      kept === undefined ? undefined : { replicas: kept.replicas, belowSince: below },
      demand,
      now,
    );
    const quick = decision.replicas === 0 || (demand?.waiting ?? 0) > 0;
    const downAt =
      decision.belowSince === undefined
        ? undefined
        : decision.belowSince + spec.scaleDownAfterMs - now + 1;
    const status = {
      replicas: decision.replicas,
      desiredReplicas: decision.desired,
      ...(decision.belowSince === undefined
        ? {}
        : { belowSince: new Date(decision.belowSince).toISOString() }),
      ...(decision.change !== undefined
        ? { lastScaleTime: new Date(now).toISOString() }
        : kept?.lastScaleTime === undefined
          ? {}
          : { lastScaleTime: kept.lastScaleTime }),
    };
    const poll = quick ? AUTOSCALE_QUICK_MS : AUTOSCALE_POLL_MS;
    return { decision, status, requeueMs: Math.min(poll, downAt ?? poll) };
  }

  /** When the time paid for `p`'s instance runs out (ms), by its provider's billing. */
  #paidUntil(p: ProxyObject, now: number): number {
    const cp = this.#deps.providers.get(p.status.instanceProvider ?? p.spec.provider);
    const billing = cp === undefined ? undefined : billingOf(cp.module.profile);
    return paidPeriodEnd(billing, p.status.cost?.since, now);
  }

  async #create(
    pool: PoolObject,
    spec: ResolvedPoolSpec,
    hash: string,
    index: number,
  ): Promise<void> {
    const entry = spec.spread[index];
    if (entry === undefined) return;
    const base = pool.spec.template.spec;
    const { namespace, name } = pool.metadata;
    let proxyName = '';
    do {
      let suffix = '';
      for (let i = 0; i < 5; i++) suffix += NAME_CHARS[randomInt(NAME_CHARS.length)];
      proxyName = `${name.slice(0, 57)}-${suffix}`;
    } while (this.#deps.proxies.get(proxyKey(namespace, proxyName)) !== undefined);
    await this.#deps.pools.createProxy(pool, {
      name: proxyName,
      labels: {
        ...(pool.spec.template.metadata?.labels ?? {}),
        [POOL_LABEL]: name,
        [TEMPLATE_HASH_LABEL]: hash,
      },
      spec: {
        ...base,
        provider: entry.provider,
        placement: { ...base.placement, ...(entry.placement ?? {}) },
      },
    });
  }

  /** Providers that cannot take a new Proxy: not configured, unhealthy, or latched for this pool. */
  #failingProviders(
    key: string,
    spec: ResolvedPoolSpec,
    owned: readonly ProxyObject[],
    now: number,
  ): Map<string, string> {
    const out = new Map<string, string>();
    const health = new Map(this.#deps.proxies.listHealth().map((h) => [h.name, h]));
    for (const { provider } of spec.spread) {
      if (this.#deps.providers.get(provider) === undefined) {
        out.set(provider, `provider ${provider} is not configured`);
        continue;
      }
      const h = health.get(provider);
      if (h !== undefined && !h.status.ready) {
        const bad = h.status.targets.find((t) => !t.ready);
        out.set(provider, `provider ${provider} is not ready${bad ? `: ${bad.message}` : ''}`);
        continue;
      }
      const latched = owned.find(
        (p) =>
          p.spec.provider === provider &&
          p.status.conditions?.some((c) => c.type === 'Latched' && c.status === 'True'),
      );
      const at = `${key}\0${provider}`;
      if (latched !== undefined) {
        const message = `provider ${provider} refused Proxy ${latched.metadata.name} permanently`;
        this.#refused.set(at, { message, until: now + this.#opts.refusalMemoryMs });
        out.set(provider, message);
        continue;
      }
      const kept = this.#refused.get(at);
      if (kept !== undefined && kept.until > now) {
        out.set(
          provider,
          `${kept.message} (tried again after ${new Date(kept.until).toISOString()})`,
        );
      } else if (kept !== undefined) {
        this.#refused.delete(at);
      }
    }
    return out;
  }

  /** The endpoint lists: plain, with each Proxy's credential (read from where it is kept), and named. */
  async #endpointLists(
    endpoints: readonly PoolEndpoint[],
    owned: readonly ProxyObject[],
  ): Promise<PublishedEndpoints> {
    if (this.#urls.size > 2 * owned.length) {
      // Forget the URLs of Proxies that are gone (any pool's), once there are more than enough.
      const live = new Set(this.#deps.proxies.list().map((x) => x.metadata.uid));
      for (const uid of this.#urls.keys()) if (!live.has(uid)) this.#urls.delete(uid);
    }
    const withCredentials: string[] = [];
    const upstreams: PublishedUpstream[] = [];
    for (const e of endpoints) {
      const p = owned.find((o) => o.metadata.name === e.name);
      const url = p === undefined ? e.url : await this.#urlWithCredential(p, e.url);
      withCredentials.push(url);
      const verified = p?.status.probe?.lastPassTime;
      const country = p?.status.location?.country;
      const region = p?.status.location?.region;
      upstreams.push({
        name: e.name,
        url,
        ...(verified === undefined ? {} : { verified }),
        ...(country === undefined && region === undefined
          ? {}
          : { location: { ...(country ? { country } : {}), ...(region ? { region } : {}) } }),
        ...(p === undefined ? {} : { provider: p.spec.provider }),
      });
    }
    return { plain: endpoints.map((e) => e.url), withCredentials, upstreams };
  }

  async #urlWithCredential(p: ProxyObject, url: string): Promise<string> {
    const store = this.#deps.credentials;
    const auth = p.spec.auth;
    if (store === undefined || auth?.type === 'none') return url;
    const { namespace, name, uid } = p.metadata;
    const c = p.status.credentials;
    const from = `${url} ${c?.rotatedTime ?? ''} ${c?.appliedHash ?? ''}`;
    const cached = this.#urls.get(uid);
    if (cached?.from === from) return cached.url;
    let out = url;
    if (auth?.secretRef !== undefined) {
      const ref = await store.readRef(namespace, auth.secretRef.name);
      if (ref.ok) out = credentialUrl(ref.credential, url);
    } else {
      const rec = await store.read({ namespace, name, uid });
      if (rec !== undefined) out = credentialUrl(rec.current, url);
    }
    // Only a URL that carries a credential is kept: one not issued yet is read again.
    if (out !== url) this.#urls.set(uid, { from, url: out });
    return out;
  }

  /** The gateway's status: what the seam answers, or that none serves `spec.gateway` here. */
  async #gateway(key: string, pool: PoolObject, verified: number) {
    const plan = gatewayPlan(pool);
    const seam = this.#deps.gateways;
    // A pool that never reported a gateway has nothing of one to remove.
    if (plan === undefined && pool.status.gateway === undefined) return undefined;
    if (seam !== undefined) return seam.sync(key, plan, verified);
    return plan && { url: '', ready: false, message: 'this operator runs no gateways' };
  }

  /** A pool that is gone: its Proxies and its gateway go too. */
  async #orphans(key: string, pool: PoolObject | undefined): Promise<void> {
    await this.#deps.gateways?.gone(key);
    for (const at of this.#refused.keys()) if (at.startsWith(`${key}\0`)) this.#refused.delete(at);
    for (const p of this.#deps.proxies.list()) {
      if (ownerKey(p) !== key || p.metadata.deletionTimestamp !== undefined) continue;
      const owner = p.metadata.ownerReferences?.find((r) => r.kind === 'ProxyPool');
      if (pool !== undefined && owner?.uid !== pool.metadata.uid) continue;
      await this.#deps.pools.deleteProxy(proxyKey(p.metadata.namespace, p.metadata.name));
    }
  }
}
