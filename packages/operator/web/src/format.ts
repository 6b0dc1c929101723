// Small formatting helpers of the status page: ages, latencies, times, phases.
import type { PagePhase } from '../../src/page/wire.js';

export { age } from '../../src/page/age.js';

/** A latency: `4 ms`, `12.5 ms`, `1.2 s`. */
export function ms(n: number | undefined): string {
  if (n === undefined) return '';
  if (n >= 1000) return `${(n / 1000).toFixed(1)} s`;
  return `${n < 10 ? Math.round(n * 10) / 10 : Math.round(n)} ms`;
}

/** A time of day in the browser's zone, with the date when it is not today. */
export function when(iso: string | undefined, now: number): string {
  if (iso === undefined) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const today = new Date(now).toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/** The phases in the order the page lists and sorts them. */
export const PHASES: readonly PagePhase[] = [
  'Ready',
  'Provisioning',
  'Pending',
  'Replacing',
  'Unhealthy',
  'Failed',
  'Deleting',
];

/** A symbol per phase, beside its name (colour is never the only sign). */
export const PHASE_SYMBOL: Readonly<Record<PagePhase, string>> = {
  Ready: '✓',
  Provisioning: '…',
  Pending: '○',
  Replacing: '↻',
  Unhealthy: '!',
  Failed: '✕',
  Deleting: '–',
};

/** Counts by phase, in {@link PHASES} order, leaving out zeros. */
export function phaseCounts(phases: Iterable<PagePhase>): Array<[PagePhase, number]> {
  const n = new Map<PagePhase, number>();
  for (const p of phases) n.set(p, (n.get(p) ?? 0) + 1);
  return PHASES.filter((p) => (n.get(p) ?? 0) > 0).map((p) => [p, n.get(p) ?? 0]);
}
