/**
 * A provider's price, as the providers file gives it (`price`): what one
 * instance costs per hour, in one currency, for any machine type or per
 * machine type. The code knows no price; a provider's profile says only
 * how its backend bills (§4.21), and this says for how much.
 *
 * @module
 */
import { billingOf, type Profile } from '@proxy-op/contract';

/** What one instance of a provider costs per hour. */
export interface ProviderPrice {
  /** An ISO 4217 code (`EUR`, `USD`). */
  readonly currency: string;
  /** Per hour, for a machine type `machineTypes` does not name; undefined when every one is named. */
  readonly perHour?: number | undefined;
  /** Per hour, by machine type (`placement.machineType`). */
  readonly machineTypes: Readonly<Record<string, number>>;
}

const CURRENCY = /^[A-Z]{3}$/;
const FIELDS = ['currency', 'perHour', 'machineTypes'];

/** Whether `v` is a price per hour: a finite number, 0 or more. */
const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * Reads a provider entry's `price` (at path `at`) for a provider whose
 * profile is `profile`: undefined when none is given. A price for a
 * provider that is not billed is refused, and so is a price with no rate.
 */
export function parsePrice(
  value: unknown,
  at: string,
  profile: Profile,
): { readonly price?: ProviderPrice | undefined; readonly problems: string[] } {
  if (value === undefined) return { problems: [] };
  const problems: string[] = [];
  if (billingOf(profile) === 'none') {
    problems.push(
      `${at}: the provider is not billed per instance (its profile says billing: none); remove price`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { problems: [...problems, `${at}: must be a mapping with currency and perHour`] };
  }
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!FIELDS.includes(k))
      problems.push(`${at}.${k}: unknown field; expected ${FIELDS.join(', ')}`);
  }
  if (typeof o.currency !== 'string' || !CURRENCY.test(o.currency)) {
    problems.push(`${at}.currency: must be an ISO 4217 code (EUR, USD)`);
  }
  if (o.perHour !== undefined && !isPrice(o.perHour)) {
    problems.push(`${at}.perHour: must be a number, 0 or more (the price of one instance-hour)`);
  }
  const machineTypes: Record<string, number> = {};
  if (o.machineTypes !== undefined) {
    if (
      o.machineTypes === null ||
      typeof o.machineTypes !== 'object' ||
      Array.isArray(o.machineTypes)
    ) {
      problems.push(`${at}.machineTypes: must map machine types to prices per hour`);
    } else {
      for (const [k, v] of Object.entries(o.machineTypes)) {
        if (isPrice(v)) machineTypes[k] = v;
        else problems.push(`${at}.machineTypes.${k}: must be a number, 0 or more`);
      }
    }
  }
  if (o.perHour === undefined && Object.keys(machineTypes).length === 0) {
    problems.push(`${at}: give perHour, machineTypes, or both`);
  }
  if (problems.length > 0) return { problems };
  return {
    price: {
      currency: o.currency as string,
      perHour: o.perHour as number | undefined,
      machineTypes,
    },
    problems,
  };
}

/**
 * What one instance of `machineType` costs per hour: its own rate, else
 * `perHour`; undefined when neither is given.
 */
export function hourlyPrice(
  price: ProviderPrice,
  machineType: string | undefined,
): number | undefined {
  const own = machineType === undefined ? undefined : price.machineTypes[machineType];
  return own ?? price.perHour;
}

/** Whether two prices are the same (a change of it rebuilds nothing). */
export function samePrice(a: ProviderPrice | undefined, b: ProviderPrice | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}
