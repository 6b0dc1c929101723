/**
 * The pool autoscaler's decision: how many Proxies a pool with
 * `spec.autoscale` keeps, from the demand its gateway sees (requests and
 * tunnels in flight, and those held while the pool is at zero). Pure: the
 * controller gives it the demand, the last decision and the clock.
 *
 * - Up at once: to the Proxies the demand needs (`ceil(demand /
 *   targetInFlight)`), at most doubling per step (from zero, one Proxy per
 *   waiting request's worth, at least one), never above `maxReplicas`.
 * - Down one Proxy at a time, once the demand has needed fewer for
 *   `scaleDownAfter`; the clock starts again after each step.
 * - Unknown demand (the gateway cannot be read) changes nothing but
 *   keeps `minReplicas`.
 *
 * @module
 */
import { type Billing, paidUntil } from '@proxy-op/contract';
import { durationMs } from '../api/duration.js';

/** What the gateway sees now. */
export interface Demand {
  /** Requests and tunnels going through the pool's Proxies. */
  readonly inFlight: number;
  /** Requests, tunnels and SOCKS5 connections held for a Proxy (the pool is at zero). */
  readonly waiting: number;
}

/** `spec.autoscale` in numbers. */
export interface AutoscaleSpec {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly targetInFlight: number;
  readonly scaleDownAfterMs: number;
}

/** What the autoscaler remembers between passes (in the pool's `status.autoscale`). */
export interface AutoscaleMemory {
  /** The Proxies it decided on last. */
  readonly replicas: number;
  /** Since when the demand has needed fewer (ms), while it does. */
  readonly belowSince?: number | undefined;
}

/** A decision. */
export interface AutoscaleDecision {
  readonly replicas: number;
  /** What the demand asks for, within the bounds. */
  readonly desired: number;
  readonly belowSince?: number | undefined;
  /** `ScaledUp` or `ScaledDown` when `replicas` changed, with the figures that made it. */
  readonly change?:
    | { readonly reason: 'ScaledUp' | 'ScaledDown'; readonly message: string }
    | undefined;
}

/** `spec.autoscale` of a validated pool, in numbers. */
export function resolveAutoscale(a: {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly targetInFlight: number;
  readonly scaleDownAfter: string;
}): AutoscaleSpec {
  return {
    minReplicas: a.minReplicas,
    maxReplicas: a.maxReplicas,
    targetInFlight: a.targetInFlight,
    scaleDownAfterMs: durationMs(a.scaleDownAfter) ?? 300_000,
  };
}

/** The Proxies the pool keeps now; see the module comment for the rules. */
export function decideReplicas(
  spec: AutoscaleSpec,
  last: AutoscaleMemory | undefined,
  demand: Demand | undefined,
  now: number,
): AutoscaleDecision {
  const clamp = (n: number) => Math.min(spec.maxReplicas, Math.max(spec.minReplicas, n));
  const current = clamp(last?.replicas ?? spec.minReplicas);
  if (demand === undefined) return { replicas: current, desired: current };
  const need = demand.inFlight + demand.waiting;
  const desired = clamp(Math.max(Math.ceil(need / spec.targetInFlight), need > 0 ? 1 : 0));
  const figures = `${demand.inFlight} in flight, ${demand.waiting} waiting, target ${spec.targetInFlight} per Proxy`;
  if (desired > current) {
    const replicas = Math.min(desired, Math.max(1, current * 2));
    return {
      replicas,
      desired,
      change: {
        reason: 'ScaledUp',
        message: `${current} → ${replicas} Proxies (${figures}; ${desired} wanted)`,
      },
    };
  }
  if (desired === current) return { replicas: current, desired };
  const since = last?.belowSince ?? now;
  if (now - since < spec.scaleDownAfterMs) return { replicas: current, desired, belowSince: since };
  const replicas = current - 1;
  return {
    replicas,
    desired,
    ...(replicas > desired ? { belowSince: now } : {}),
    change: {
      reason: 'ScaledDown',
      message: `${current} → ${replicas} Proxies (${figures}; ${desired} wanted for ${Math.round((now - since) / 1000)} s)`,
    },
  };
}

/**
 * When a Proxy's paid period ends (ms), by its provider's billing: the one
 * ending first goes first on a scale-down. `now` for one that is not billed
 * or has no cost (nothing is paid ahead).
 */
export function paidPeriodEnd(
  billing: Billing | undefined,
  since: string | undefined,
  now: number,
): number {
  if (billing === undefined || billing === 'none' || since === undefined) return now;
  const start = Date.parse(since);
  if (Number.isNaN(start)) return now;
  return paidUntil(billing, new Date(start), new Date(now))?.getTime() ?? now;
}
