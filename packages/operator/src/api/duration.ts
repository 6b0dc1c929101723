/**
 * Durations as the operator writes them, in flags and in Proxy specs alike:
 * `500ms`, `10s`, `5m`, `1h` (or `0`).
 *
 * @module
 */

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** The pattern of a duration, for the schemas. */
export const DURATION_PATTERN = '^(0|\\d+(\\.\\d+)?(ms|s|m|h))$';

/** A duration (`500ms`, `10s`, `5m`, `1h`, `0`) in milliseconds; undefined when it is none. */
export function durationMs(s: string): number | undefined {
  if (s === '0') return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(s.trim());
  if (m === null) return undefined;
  return Math.round(Number(m[1]) * UNITS[m[2] as keyof typeof UNITS]);
}

/** Writes milliseconds as a duration in the largest unit that divides them (`300000` is `5m`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const unit of ['h', 'm', 's'] as const) {
    if (ms % UNITS[unit] === 0) return `${ms / UNITS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
