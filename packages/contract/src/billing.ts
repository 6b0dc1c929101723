/**
 * What a billing model (§4.21) means in seconds and money, and the checks
 * of an instance's location: what scaling down asks (which member's paid
 * time runs out first) and what a cost report adds up. Prices are never
 * here: they come from whoever configures the provider.
 *
 * @module
 */
import type { Billing } from './profile.js';
import type { Location } from './types.js';

const PERIOD_SECONDS = { second: 1, minute: 60, hour: 3600 } as const;

/**
 * The seconds paid for an instance that ran `seconds`: the minimum at
 * least, and every started period in full. Zero when not billed.
 */
export function billedSeconds(billing: Billing, seconds: number): number {
  if (billing === 'none') return 0;
  const ran = Math.max(0, seconds, billing.minimumSeconds);
  const unit = PERIOD_SECONDS[billing.period];
  return Math.ceil(ran / unit) * unit;
}

/**
 * When the time already paid for an instance started at `startedAt` runs
 * out, seen at `now`: deleting it before then saves nothing more. Undefined
 * when the backend does not bill.
 */
export function paidUntil(billing: Billing, startedAt: Date, now: Date): Date | undefined {
  if (billing === 'none') return undefined;
  const ran = (now.getTime() - startedAt.getTime()) / 1000;
  return new Date(startedAt.getTime() + billedSeconds(billing, ran) * 1000);
}

/**
 * What an instance that ran `seconds` costs at `pricePerHour`, in the
 * price's currency. Zero when not billed.
 */
export function costOf(billing: Billing, seconds: number, pricePerHour: number): number {
  return (billedSeconds(billing, seconds) / 3600) * pricePerHour;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const COUNTRY = /^[A-Z]{2}$/;

/**
 * What is wrong with a location a provider reported, one message per
 * problem naming the field under `where` (`instance.location`); empty
 * when it is well formed. Region and zone are names (letters, digits,
 * `.`, `_`, `:`, `/`, `-`; at most 128 characters); the country is an
 * upper-case ISO 3166-1 alpha-2 code.
 */
export function locationProblems(location: unknown, where = 'location'): string[] {
  if (location === undefined) return [];
  if (location === null || typeof location !== 'object') return [`${where}: must be an object`];
  const l = location as Location & Record<string, unknown>;
  const problems: string[] = [];
  for (const key of ['region', 'zone'] as const) {
    const v: unknown = l[key];
    if (v !== undefined && (typeof v !== 'string' || !NAME.test(v))) {
      problems.push(`${where}.${key}: ${JSON.stringify(v)} is not a region or zone name`);
    }
  }
  const c: unknown = l.country;
  if (c !== undefined && (typeof c !== 'string' || !COUNTRY.test(c))) {
    problems.push(
      `${where}.country: ${JSON.stringify(c)} is not an upper-case ISO 3166-1 alpha-2 code (DE, US)`,
    );
  }
  return problems;
}
