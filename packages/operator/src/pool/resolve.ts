/**
 * A validated ProxyPool spec as the planner takes it: counts that may be
 * percentages resolved against the replicas (surge rounded up,
 * unavailability down, as Kubernetes rounds them), durations in
 * milliseconds, the spread with the template's provider when none is given.
 *
 * @module
 */
import { durationMs } from '../api/duration.js';
import type { PoolSpec } from '../api/pool.js';
import { parseQuantity, type Quantity, scaled } from '../api/quantity.js';

/** The spec as numbers, milliseconds and quantities: what the planner takes. */
export interface ResolvedPoolSpec {
  /** Proxies to keep. */
  readonly replicas: number;
  /** Nothing is created, rolled, rotated or remediated. */
  readonly paused: boolean;
  /** Surge and unavailability, resolved against `replicas` (surge up, unavailable down). */
  readonly maxSurge: number;
  /** See `maxSurge`. */
  readonly maxUnavailable: number;
  /** `minReadySeconds` in ms. */
  readonly minReadyMs: number;
  /** Which Proxies go first on a scale-down. */
  readonly deletePolicy: 'Random' | 'Newest' | 'Oldest';
  /**
   * With `spec.autoscale`: a scale-down takes the Proxy whose paid period
   * ends first (after the unavailable ones), whatever `deletePolicy` says.
   */
  readonly paidFirst: boolean;
  /** Rotation, when asked for. */
  readonly rotation?:
    | {
        readonly maxAgeMs: number;
        readonly jitter: number;
        readonly drainMs: number;
        readonly budget: number;
      }
    | undefined;
  /** Drain of a Proxy taken out on a rollout or scale-down (the rotation's, or 0). */
  readonly drainMs: number;
  /** `remediation.unhealthyTimeout` in ms. */
  readonly unhealthyTimeoutMs: number;
  /** `remediation.startupTimeout` in ms. */
  readonly startupTimeoutMs: number;
  /** Replacements at once (at least 1). */
  readonly maxInFlight: number;
  /** The short-circuit, as given. */
  readonly maxUnhealthy: Quantity;
  /** Providers and their weights; one entry (the template's provider) without spread. */
  readonly spread: readonly {
    readonly provider: string;
    readonly weight: number;
    readonly placement?: PoolSpec['template']['spec']['placement'];
  }[];
}

/** The numbers of a validated spec (see {@link ResolvedPoolSpec}). */
export function resolvePoolSpec(spec: PoolSpec): ResolvedPoolSpec {
  const q = (v: unknown, name: string): Quantity => {
    const p = parseQuantity(v);
    if (p === undefined) throw new TypeError(`${name} is not a count or a percentage`);
    return p;
  };
  const ms = (v: string | undefined, dflt: number) =>
    v === undefined ? dflt : (durationMs(v) ?? dflt);
  const r = spec.replicas;
  const rot = spec.rotation;
  const rotation =
    rot?.maxAge === undefined
      ? undefined
      : {
          maxAgeMs: ms(rot.maxAge, 0),
          jitter: Number(rot.jitter.slice(0, -1)) / 100,
          drainMs: rot.drainSeconds * 1000,
          budget: Math.max(1, scaled(q(rot.budget, 'spec.rotation.budget'), r, 'down')),
        };
  return {
    replicas: r,
    paused: spec.paused,
    maxSurge: scaled(q(spec.strategy.maxSurge, 'spec.strategy.maxSurge'), r, 'up'),
    maxUnavailable: scaled(
      q(spec.strategy.maxUnavailable, 'spec.strategy.maxUnavailable'),
      r,
      'down',
    ),
    minReadyMs: spec.minReadySeconds * 1000,
    deletePolicy: spec.deletePolicy,
    paidFirst: spec.autoscale !== undefined,
    rotation,
    drainMs: rotation?.drainMs ?? 0,
    unhealthyTimeoutMs: ms(spec.remediation.unhealthyTimeout, 300_000),
    startupTimeoutMs: ms(spec.remediation.startupTimeout, 600_000),
    maxInFlight: Math.max(
      1,
      scaled(q(spec.remediation.maxInFlight, 'spec.remediation.maxInFlight'), r, 'down'),
    ),
    maxUnhealthy: q(spec.remediation.maxUnhealthy, 'spec.remediation.maxUnhealthy'),
    spread:
      spec.spread !== undefined && spec.spread.length > 0
        ? spec.spread.map((s) => ({
            provider: s.provider,
            weight: s.weight,
            placement: s.placement,
          }))
        : [{ provider: spec.template.spec.provider, weight: 1 }],
  };
}
