/**
 * The health monitor: runs each provider's Checker and turns the answer into
 * a ProviderHealth, keeping each target's `lastTransitionTime` while its
 * reason stays the same.
 *
 * @module
 */
import type { TargetResult } from '@proxy-op/contract';
import type { ProviderHealth, TargetHealth } from '../api/proxy.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import { withDeadline } from '../runtime/deadline.js';
import type { ProxyStore } from '../store/proxies.js';

/**
 * Builds the ProviderHealth for one check round. `previous` is the last one
 * written for this provider: a target whose reason (and readiness) did not
 * change keeps its `lastTransitionTime`.
 */
export function toProviderHealth(
  name: string,
  type: string,
  results: readonly TargetResult[],
  previous: ProviderHealth | undefined,
  now: Date,
): ProviderHealth {
  const prior = new Map((previous?.status.targets ?? []).map((t) => [t.target, t]));
  const targets: TargetHealth[] = results.map((r) => {
    const old = prior.get(r.target);
    const same = old !== undefined && old.reason === r.reason && old.ready === r.ready;
    return {
      target: r.target,
      address: r.address,
      ready: r.ready,
      reason: r.reason,
      message: r.message,
      details: { ...r.details },
      lastTransitionTime: same ? old.lastTransitionTime : now.toISOString(),
    };
  });
  return {
    name,
    status: {
      type,
      ready: targets.length > 0 && targets.every((t) => t.ready),
      targets,
      lastCheckTime: now.toISOString(),
    },
  };
}

/**
 * Runs one provider's Checker with a timeout; `signal` (the operator's stop)
 * ends the round early too. A provider without a Checker gives undefined; a
 * Checker that throws gives one not-ready target named after the provider,
 * reason `APIError`.
 */
export async function checkProvider(
  cp: ConfiguredProvider,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<TargetResult[] | undefined> {
  const check = cp.provider.check;
  if (check === undefined) return undefined;
  try {
    return await withDeadline(timeoutMs, signal, (o) => check.call(cp.provider, o));
  } catch (err) {
    return [
      {
        target: cp.name,
        address: '',
        ready: false,
        reason: 'APIError',
        message: `the check failed: ${(err as Error).message}`,
        details: {},
      },
    ];
  }
}

/**
 * One health round: every provider with a Checker, concurrently, each
 * answer written as its ProviderHealth. A round `signal` ends writes
 * nothing more.
 */
export async function healthRound(
  providers: ProviderSet,
  store: ProxyStore,
  checkTimeoutMs: number,
  now: () => Date,
  signal: AbortSignal,
): Promise<ProviderHealth[]> {
  const previous = new Map(store.listHealth().map((h) => [h.name, h]));
  const out = await Promise.all(
    providers.list().map(async (cp) => {
      const results = await checkProvider(cp, checkTimeoutMs, signal);
      if (results === undefined || signal.aborted) return undefined;
      const health = toProviderHealth(cp.name, cp.type, results, previous.get(cp.name), now());
      await store.writeHealth(health);
      return health;
    }),
  );
  return out.filter((h): h is ProviderHealth => h !== undefined);
}
