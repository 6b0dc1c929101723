/**
 * Remediation's short-circuit, per provider, after Cluster API's
 * MachineHealthCheck: when more of a provider's probed proxies fail at once
 * than its `probe.maxUnhealthy` allows (a count, or a percentage of those
 * probed, rounded down), no Proxy of that provider is replaced, since a
 * target or a network that is down for all of them would otherwise have
 * every proxy replaced for nothing. The state is kept per provider, and so
 * is the message of the moment it tripped, so the condition each Proxy
 * carries does not change (and is not written again) with every count.
 *
 * @module
 */
import type { ProbeRecord } from './record.js';
import { allowedUnhealthy, formatMaxUnhealthy, type MaxUnhealthy } from './settings.js';

/** One provider's short-circuit, as the condition `RemediationAllowed` shows it. */
export interface ShortCircuit {
  /** Remediation is allowed: no more of the provider's proxies fail than `maxUnhealthy` allows. */
  readonly allowed: boolean;
  /** The condition's reason. */
  readonly reason: 'WithinMaxUnhealthy' | 'TooManyUnhealthy';
  /** The condition's message, as made when the state last flipped. */
  readonly message: string;
  /** Probed proxies of the provider when it was last counted. */
  readonly probed: number;
  /** Those of them failing. */
  readonly failing: number;
}

/** The short-circuits of every provider. */
export class ShortCircuits {
  readonly #state = new Map<string, ShortCircuit>();

  /** The provider's short-circuit as last counted (allowed when never counted). */
  get(provider: string, max: MaxUnhealthy): ShortCircuit {
    return this.#state.get(provider) ?? this.#allowed(provider, max, 0, 0);
  }

  #allowed(provider: string, max: MaxUnhealthy, probed: number, failing: number): ShortCircuit {
    return {
      allowed: true,
      reason: 'WithinMaxUnhealthy',
      message: `no more of provider ${provider}'s probed proxies fail than its probe.maxUnhealthy (${formatMaxUnhealthy(max)}) allows`,
      probed,
      failing,
    };
  }

  /**
   * Counts the provider's records again; returns the new state when it
   * flipped (allowed to held or back), else undefined.
   */
  count(
    provider: string,
    max: MaxUnhealthy,
    records: Iterable<ProbeRecord>,
  ): ShortCircuit | undefined {
    let probed = 0;
    let failing = 0;
    for (const r of records) {
      if (r.instance.provider !== provider) continue;
      probed++;
      if (r.verdict === 'failing') failing++;
    }
    const limit = allowedUnhealthy(max, probed);
    const before = this.get(provider, max);
    const allowed = failing <= limit;
    if (allowed === before.allowed) {
      // Same state: the counts move, the message (and so the condition) stays.
      this.#state.set(provider, { ...before, probed, failing });
      return undefined;
    }
    const next: ShortCircuit = allowed
      ? this.#allowed(provider, max, probed, failing)
      : {
          allowed: false,
          reason: 'TooManyUnhealthy',
          message: `${failing} of provider ${provider}'s ${probed} probed proxies failed at once, more than its probe.maxUnhealthy (${formatMaxUnhealthy(max)}, ${limit} of ${probed}) allows: the probe target or the network is more likely at fault than the proxies, so none is replaced`,
          probed,
          failing,
        };
    this.#state.set(provider, next);
    return next;
  }

  /** Forgets a provider no longer configured. */
  forget(provider: string): void {
    this.#state.delete(provider);
  }
}
