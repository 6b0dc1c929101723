/**
 * Canonical JSON: the same text for equal plain values whatever the order
 * of their keys (undefined fields left out), for comparing specs and
 * statuses and for hashing them.
 *
 * @module
 */

/** A canonical JSON text of any plain value (sorted keys), for comparisons. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
