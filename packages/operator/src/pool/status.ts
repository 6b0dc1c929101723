/**
 * A pool's status from a pass's plan: the counts, the verified endpoints
 * (Ready Proxies, none draining or going), the drains under way, the
 * remediation backoff (doubling per replacement in a row, reset once the
 * pool is available; one unhealthyTimeout after a pool-wide failure), and the conditions `Available`, `Progressing`,
 * `RemediationAllowed` and `SpreadDegraded`.
 *
 * @module
 */
import { setCondition } from '../api/conditions.js';
import type { PoolEndpoint, PoolObject, PoolStatus } from '../api/pool.js';
import { POOL_LABEL } from '../api/pool.js';
import type { ProxyObject } from '../api/proxy.js';
import type { Plan } from './plan.js';
import type { ResolvedPoolSpec } from './resolve.js';

/** What {@link poolStatus} is made from. */
export interface PoolStatusInput {
  readonly pool: PoolObject;
  readonly spec: ResolvedPoolSpec;
  readonly hash: string;
  readonly plan: Plan;
  readonly owned: readonly ProxyObject[];
  /** Drains under way before the pass: name → until (ms). */
  readonly draining: ReadonlyMap<string, number>;
  /** Providers that take no new Proxy, with why. */
  readonly failing: ReadonlyMap<string, string>;
  readonly now: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

/** The status the pass writes. */
export function poolStatus(a: PoolStatusInput): PoolStatus {
  const { pool, spec, hash, plan, owned, draining, failing, now } = a;
  const gone = new Set([...plan.delete, ...plan.drain]);
  const live = owned.filter(
    (p) => p.metadata.deletionTimestamp === undefined && !plan.delete.includes(p.metadata.name),
  );
  const nextDraining = [
    ...[...draining].filter(([n]) => live.some((p) => p.metadata.name === n)),
    ...plan.drain.map((n) => [n, now + spec.drainMs] as const),
  ].map(([name, until]) => ({ name, until: new Date(until).toISOString() }));
  const endpoints: PoolEndpoint[] = live
    .filter((p) => !gone.has(p.metadata.name) && !draining.has(p.metadata.name))
    .filter(
      (p) =>
        p.status.endpoint !== undefined &&
        p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
    .map((p) => ({
      name: p.metadata.name,
      url: p.status.endpoint as string,
      ...(p.status.egressIP === undefined ? {} : { egressIP: p.status.egressIP }),
      provider: p.spec.provider,
      since: p.metadata.creationTimestamp,
    }));
  const gen = pool.metadata.generation;
  let conditions = pool.status.conditions ?? [];
  const cond = (
    type: NonNullable<PoolStatus['conditions']>[number]['type'],
    ok: boolean,
    reason: string,
    message: string,
  ) => {
    conditions = setCondition(
      conditions,
      { type, status: ok ? 'True' : 'False', reason, message, observedGeneration: gen },
      new Date(now),
    );
  };
  const minAvailable = spec.replicas - spec.maxUnavailable;
  cond(
    'Available',
    plan.available >= minAvailable,
    plan.available >= minAvailable ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
    `${plan.available} of ${spec.replicas} Proxies available (at least ${minAvailable} wanted)`,
  );
  const done =
    plan.updated === spec.replicas &&
    plan.available >= spec.replicas &&
    live.length === spec.replicas;
  cond(
    'Progressing',
    !done,
    spec.paused ? 'Paused' : done ? 'NewTemplateAvailable' : 'Rolling',
    spec.paused
      ? 'the pool is paused: nothing is created, rolled or remediated'
      : done
        ? `every Proxy runs template ${hash}`
        : `${plan.updated} of ${spec.replicas} Proxies on template ${hash}, ${plan.available} available`,
  );
  cond(
    'RemediationAllowed',
    !plan.shortCircuit,
    plan.shortCircuit ? 'TooManyUnhealthy' : 'WithinMaxUnhealthy',
    plan.shortCircuit
      ? `${plan.unhealthy} of the pool's ${live.length} Proxies are unhealthy at once, more than remediation.maxUnhealthy allows: the probe target or the network is more likely at fault, so none is replaced`
      : `${plan.unhealthy} unhealthy, within remediation.maxUnhealthy`,
  );
  const degraded = [...failing.values()];
  cond(
    'SpreadDegraded',
    degraded.length > 0,
    degraded.length > 0 ? 'ProviderFailing' : 'AllProvidersTakeProxies',
    degraded.length > 0
      ? `${degraded.join('; ')}; the other providers carry the pool${plan.unplaced > 0 ? ` (${plan.unplaced} Proxies could not be placed at all)` : ''}`
      : 'every provider of the spread takes new Proxies',
  );
  let remediations = pool.status.remediations ?? 0;
  let backoffUntil = pool.status.remediationBackoffUntil;
  if (plan.remediated.length > 0) {
    remediations += plan.remediated.length;
    const wait = Math.min(a.backoffMaxMs, a.backoffBaseMs * 2 ** (remediations - 1));
    backoffUntil = new Date(now + wait).toISOString();
  } else if (plan.shortCircuit) {
    // After a failure of the whole pool, the Proxies recover one by one: remediation waits
    // one more unhealthyTimeout from the last pass that saw the pool failing together.
    backoffUntil = new Date(now + spec.unhealthyTimeoutMs).toISOString();
  } else if (plan.available >= spec.replicas && remediations > 0) {
    remediations = 0;
    backoffUntil = undefined;
  }
  return {
    replicas: live.length,
    readyReplicas: plan.ready,
    updatedReplicas: plan.updated,
    availableReplicas: plan.available,
    observedGeneration: gen,
    selector: `${POOL_LABEL}=${pool.metadata.name}`,
    templateHash: hash,
    endpoints,
    draining: nextDraining,
    ...(() => {
      const cost = costByCurrency(live);
      return cost.length === 0 ? {} : { cost };
    })(),
    ...(remediations > 0 ? { remediations } : {}),
    ...(backoffUntil === undefined ? {} : { remediationBackoffUntil: backoffUntil }),
    conditions,
  };
}

/** What `proxies` cost per hour now, summed by currency (rounded to a millionth). */
export function costByCurrency(
  proxies: readonly ProxyObject[],
): { currency: string; perHour: number; proxies: number }[] {
  const by = new Map<string, { perHour: number; proxies: number }>();
  for (const p of proxies) {
    const c = p.status.cost;
    if (c === undefined) continue;
    const sum = by.get(c.currency) ?? { perHour: 0, proxies: 0 };
    sum.perHour += c.perHour;
    sum.proxies++;
    by.set(c.currency, sum);
  }
  return [...by]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, s]) => ({
      currency,
      perHour: Math.round(s.perHour * 1e6) / 1e6,
      proxies: s.proxies,
    }));
}
