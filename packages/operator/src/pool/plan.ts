/**
 * The pool's decisions, as a pure function of what the store holds: which
 * Proxies to create (and on which provider), which to take out of the
 * endpoint list for their drain, which to delete. The rules are Kubernetes'
 * Deployment and Cluster API's where they fit:
 *
 * - a rollout (template change) or a rotation (age) surges first: never more
 *   than `replicas + maxSurge` Proxies serving or draining, never fewer than
 *   `replicas - maxUnavailable` available (the old ones go only as new ones
 *   become available: `reconcileOldReplicaSets`' arithmetic);
 * - remediation (MachineHealthCheck): a Proxy not Ready for
 *   `unhealthyTimeout` after it was, or never Ready within `startupTimeout`,
 *   is deleted, at most `maxInFlight` at once, none while more than
 *   `maxUnhealthy` are unhealthy, and with a per-pool backoff so a template
 *   that cannot work does not create in a loop; a Proxy its provider latched
 *   is not counted against `maxUnhealthy` while another provider of the
 *   spread takes new Proxies (its cause is known, and the others carry it);
 * - a Proxy whose backend took its instance back (Preempted) is not
 *   unhealthy and counts against nothing: it is replaced as an outdated one
 *   is, a new one surged first where `maxSurge` allows (make before break);
 * - on scale-down unhealthy Proxies go first, then by `deletePolicy` (with
 *   autoscaling: the one whose paid period ends first).
 *
 * Nothing here reads a clock or a random source: `now` is given, and every
 * per-Proxy spread (rotation jitter, the Random policy) comes from a hash of
 * the Proxy's UID, so every pass decides the same.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { scaled } from '../api/quantity.js';
import type { ResolvedPoolSpec } from './resolve.js';

/** One Proxy of the pool, as the planner sees it. */
export interface Member {
  /** The Proxy's name. */
  readonly name: string;
  /** The Proxy's UID (its jitter and its place in a Random order come from it). */
  readonly uid: string;
  /** Creation time, ms. */
  readonly created: number;
  /** The template hash it was made from. */
  readonly hash: string;
  /** The provider it runs on. */
  readonly provider: string;
  /** Ready (Running and probe-verified) with an endpoint. */
  readonly ready: boolean;
  /** When the Ready condition last changed, ms. */
  readonly readyChanged?: number | undefined;
  /** It had been Ready before it turned not Ready (the probe failed). */
  readonly wasReady: boolean;
  /** Being deleted. */
  readonly deleting: boolean;
  /** In its drain until then (ms): out of the endpoint list. */
  readonly drainingUntil?: number | undefined;
  /** `proxy-op.io/skip-remediation` is set. */
  readonly skipRemediation: boolean;
  /** `proxy-op.io/remediate` is set: replace it now. */
  readonly remediate: boolean;
  /** When the time paid for its instance runs out (ms); the pass's time when nothing is paid ahead. */
  readonly paidUntil?: number | undefined;
  /** Its provider refused it permanently (`Latched`): it will not become Ready as it is. */
  readonly latched?: boolean | undefined;
  /** Its backend took its instance back (a spot instance): replaced, never counted as failing. */
  readonly preempted?: boolean | undefined;
}

/** What the planner knows besides the members. */
export interface PlanInput {
  /** The pool's spec, resolved. */
  readonly spec: ResolvedPoolSpec;
  /** The current template's hash. */
  readonly hash: string;
  /** The pool's Proxies. */
  readonly members: readonly Member[];
  /** Now, ms. */
  readonly now: number;
  /** Providers that cannot take a new Proxy now (not configured, unhealthy, latched), with why. */
  readonly failingProviders: ReadonlyMap<string, string>;
  /** No remediation before this time (ms): the pool's backoff. */
  readonly remediationBackoffUntil?: number | undefined;
}

/** What to do this pass. */
export interface Plan {
  /** New Proxies of the current template, one provider each. */
  readonly create: readonly { readonly provider: string; readonly index: number }[];
  /** Out of the endpoint list now, deleted once drained. */
  readonly drain: readonly string[];
  /** Delete now: drained, unhealthy, or going without a drain. */
  readonly delete: readonly string[];
  /** Of `delete`, those remediated. */
  readonly remediated: readonly string[];
  /** Proxies failing now (counted against maxUnhealthy), and whether remediation was held back. */
  readonly unhealthy: number;
  /** Remediation was held back: more fail than maxUnhealthy allows. */
  readonly shortCircuit: boolean;
  /** Proxies of the current template that serve. */
  readonly updated: number;
  /** Proxies available (Ready for minReadySeconds), those going left out. */
  readonly available: number;
  /** Proxies Ready, those going left out. */
  readonly ready: number;
  /** Creates wanted but held back: no provider can take one. */
  readonly unplaced: number;
  /** When something changes without a store event (ms from now), if ever. */
  readonly requeueMs?: number | undefined;
}

/** A number in [0, 1) from a string, stable across passes and processes. */
export function unitHash(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32BE(0) / 2 ** 32;
}

/** Whether a serving member has been available (Ready for minReadySeconds). */
function availableAt(m: Member, spec: ResolvedPoolSpec, now: number): boolean {
  return m.ready && (m.readyChanged ?? m.created) + spec.minReadyMs <= now;
}

/** When the member turns unhealthy (ms), or undefined while it is Ready. */
function unhealthyAt(m: Member, spec: ResolvedPoolSpec): number | undefined {
  if (m.remediate) return Number.NEGATIVE_INFINITY;
  if (m.ready) return undefined;
  if (m.wasReady) return (m.readyChanged ?? m.created) + spec.unhealthyTimeoutMs;
  return m.created + spec.startupTimeoutMs;
}

/** When the member's rotation is due (ms): maxAge less its share of the jitter. */
function expiresAt(m: Member, spec: ResolvedPoolSpec): number | undefined {
  const r = spec.rotation;
  if (r === undefined || r.maxAgeMs <= 0) return undefined;
  return m.created + r.maxAgeMs * (1 - r.jitter * unitHash(m.uid));
}

/** Orders members for removal: unavailable first, then by the delete policy (or paid period). */
function removalOrder(ms: readonly Member[], spec: ResolvedPoolSpec, now: number): Member[] {
  const key = (m: Member) =>
    spec.paidFirst
      ? (m.paidUntil ?? now)
      : spec.deletePolicy === 'Newest'
        ? -m.created
        : spec.deletePolicy === 'Oldest'
          ? m.created
          : unitHash(m.uid);
  return [...ms].sort((a, b) => {
    const ua = availableAt(a, spec, now) ? 1 : 0;
    const ub = availableAt(b, spec, now) ? 1 : 0;
    return ua - ub || key(a) - key(b) || (a.name < b.name ? -1 : 1);
  });
}

/** The pass's plan; see the module's comment for the rules. */
export function planPool(input: PlanInput): Plan {
  const { spec, hash, now } = input;
  const live = input.members.filter((m) => !m.deleting);
  const draining = live.filter((m) => m.drainingUntil !== undefined);
  const serving = live.filter((m) => m.drainingUntil === undefined);
  const wake: number[] = [];
  const del: string[] = [];
  const drain: string[] = [];
  const remediated: string[] = [];

  // Drains that are over.
  for (const m of draining) {
    if ((m.drainingUntil as number) <= now) del.push(m.name);
    else wake.push(m.drainingUntil as number);
  }

  // Remediation: those past their timeout are replaced, unless more fail right now (past
  // their timeout or not: a fleet failing together is caught while its failures stagger)
  // than maxUnhealthy allows.
  const failing: Member[] = [];
  // Latched on a provider the spread routes around: not evidence of a fleet failing together.
  const carried = spec.spread.some((e) => !input.failingProviders.has(e.provider));
  const known = (m: Member) =>
    m.latched === true && carried && input.failingProviders.has(m.provider);
  const unhealthy = serving.filter((m) => {
    // Not the proxy's failure: replaced as an outdated member is, below.
    if (m.preempted === true && !m.remediate) return false;
    const at = unhealthyAt(m, spec);
    if (at === undefined) return false;
    if ((m.wasReady || at <= now) && !known(m)) failing.push(m);
    if (at > now) {
      wake.push(at);
      return false;
    }
    return !m.skipRemediation || m.remediate;
  });
  // A percentage allows at least one: a lone failing Proxy is replaced, a whole failing fleet is not.
  const limit =
    'percent' in spec.maxUnhealthy
      ? Math.max(1, scaled(spec.maxUnhealthy, serving.length, 'down'))
      : spec.maxUnhealthy.count;
  const shortCircuit = failing.length > limit;
  const gone = new Set<string>();
  if (!spec.paused && !shortCircuit && unhealthy.length > 0) {
    const backoff = input.remediationBackoffUntil ?? 0;
    if (backoff > now) wake.push(backoff);
    else {
      const inFlight = input.members.filter((m) => m.deleting).length;
      const room = Math.max(0, spec.maxInFlight - inFlight);
      for (const m of removalOrder(unhealthy, spec, now).slice(0, room)) {
        del.push(m.name);
        remediated.push(m.name);
        gone.add(m.name);
      }
    }
  }

  const rest = serving.filter((m) => !gone.has(m.name));
  // Rotation: at most `budget` of the expired ones (the oldest) are outdated at once, drains included.
  const expired = rest
    .filter((m) => {
      const at = expiresAt(m, spec);
      if (at === undefined) return false;
      if (at > now) wake.push(at);
      return at <= now;
    })
    .sort((a, b) => a.created - b.created);
  const budget =
    spec.rotation === undefined ? 0 : Math.max(0, spec.rotation.budget - draining.length);
  const rotating = new Set(expired.slice(0, budget).map((m) => m.name));
  // A preempted member is replaced like an outdated one: a surge first where maxSurge allows.
  const isOld = (m: Member) => m.hash !== hash || rotating.has(m.name) || m.preempted === true;
  const current = rest.filter((m) => !isOld(m));
  const old = rest.filter(isOld);
  const isAvailable = (m: Member) => availableAt(m, spec, now);
  for (const m of rest) {
    if (m.ready && !isAvailable(m)) wake.push((m.readyChanged ?? m.created) + spec.minReadyMs);
  }

  const create: { provider: string; index: number }[] = [];
  let unplaced = 0;
  const out = (m: Member) => {
    if (spec.drainMs > 0 && m.ready) {
      drain.push(m.name);
      wake.push(now + spec.drainMs);
    } else del.push(m.name);
    gone.add(m.name);
  };
  if (!spec.paused) {
    // Creates: up to replicas of the current template, within the surge while old ones remain.
    const want = spec.replicas - current.length;
    const total =
      rest.length + draining.length - del.filter((n) => draining.some((d) => d.name === n)).length;
    const room = old.length > 0 ? spec.replicas + spec.maxSurge - total : want;
    const n = Math.max(0, Math.min(want, room));
    const placed = place(n, input, [...current, ...old]);
    create.push(...placed);
    unplaced = n - placed.length;

    // Removals of old ones, as availability allows.
    const minAvailable = spec.replicas - spec.maxUnavailable;
    const newUnavailable = current.filter((m) => !isAvailable(m)).length;
    let maxDown = rest.length - minAvailable - newUnavailable;
    let available = rest.filter(isAvailable).length;
    for (const m of removalOrder(old, spec, now)) {
      if (maxDown <= 0) break;
      const avail = isAvailable(m);
      if (avail && available - 1 < minAvailable) break;
      out(m);
      maxDown--;
      if (avail) available--;
    }
    // A plain scale-down: current ones beyond replicas, once no old one is left.
    const excess = current.length - spec.replicas;
    if (excess > 0 && old.length === 0) {
      for (const m of removalOrder(current, spec, now).slice(0, excess)) out(m);
    }
  }

  const stay = rest.filter((m) => !gone.has(m.name));
  const soonest = wake.length > 0 ? Math.min(...wake) : undefined;
  return {
    create,
    drain,
    delete: del,
    remediated,
    unhealthy: failing.length,
    shortCircuit,
    updated: stay.filter((m) => !isOld(m)).length,
    available: stay.filter(isAvailable).length,
    ready: stay.filter((m) => m.ready).length,
    unplaced,
    requeueMs: soonest === undefined ? undefined : Math.max(0, soonest - now),
  };
}

/**
 * Places `n` new Proxies over the spread's providers by weight: each goes to
 * the provider furthest below its share, skipping failing ones (the others
 * carry the pool). Resolves fewer than `n` when every provider fails.
 */
function place(
  n: number,
  input: PlanInput,
  members: readonly Member[],
): { provider: string; index: number }[] {
  const entries = input.spec.spread
    .map((s, index) => ({ ...s, index }))
    .filter((s) => !input.failingProviders.has(s.provider));
  if (entries.length === 0) return [];
  const count = new Map<string, number>();
  for (const m of members) count.set(m.provider, (count.get(m.provider) ?? 0) + 1);
  const out: { provider: string; index: number }[] = [];
  for (let i = 0; i < n; i++) {
    let best = entries[0] as (typeof entries)[number];
    let bestScore = Number.POSITIVE_INFINITY;
    for (const e of entries) {
      const score = ((count.get(e.provider) ?? 0) + 1) / e.weight;
      if (score < bestScore) {
        best = e;
        bestScore = score;
      }
    }
    count.set(best.provider, (count.get(best.provider) ?? 0) + 1);
    out.push({ provider: best.provider, index: best.index });
  }
  return out;
}
