/**
 * What every command's arguments share: the usage error (exit code 2) and
 * durations written `500ms`, `10s`, `5m`, `1h` (or `0`).
 *
 * @module
 */
import { durationMs } from '../api/duration.js';
import { UsageError } from '../errors.js';

export { formatDuration } from '../api/duration.js';

export { UsageError } from '../errors.js';

/** Parses a duration (`500ms`, `10s`, `5m`, `1h`, `0`) into milliseconds. */
export function parseDuration(s: string): number {
  const ms = durationMs(s);
  if (ms === undefined) throw new UsageError(`"${s}" is not a duration (500ms, 10s, 5m, 1h)`);
  return ms;
}
