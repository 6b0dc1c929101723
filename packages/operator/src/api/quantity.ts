/**
 * Counts that may be percentages (`3`, `"25%"`, Kubernetes' int-or-string),
 * parsed and scaled against a total as Kubernetes rounds them.
 *
 * @module
 */

/** A count or a percentage, parsed. */
export type Quantity = { readonly count: number } | { readonly percent: number };

/** `3` or `"25%"` as a {@link Quantity}. */
export function parseQuantity(v: unknown): Quantity | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return { count: v };
  const m = typeof v === 'string' ? /^(100|[1-9]?[0-9])%$/.exec(v) : null;
  return m === null ? undefined : { percent: Number(m[1]) };
}

/** A quantity of `total`: a percentage rounded up or down as asked. */
export function scaled(q: Quantity, total: number, round: 'up' | 'down'): number {
  if ('count' in q) return q.count;
  const x = (q.percent * total) / 100;
  return round === 'up' ? Math.ceil(x) : Math.floor(x);
}
