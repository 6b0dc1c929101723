/**
 * The operator's logs: pino JSON lines carrying `traceId` and `spanId`.
 *
 * @module
 */
import { type Logger, traceFields } from '@proxy-op/contract';
import { type DestinationStream, type LevelWithSilent, pino } from 'pino';

/**
 * A pino logger (JSON lines) whose every line carries the active span's
 * `traceId` and `spanId`. Writes to `destination` (default stderr).
 */
export function createLogger(
  opts: { level?: LevelWithSilent | undefined; destination?: DestinationStream | undefined } = {},
): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { name: 'proxy-op' },
      mixin: () => traceFields(),
    },
    opts.destination ?? pino.destination({ fd: 2, sync: true }),
  ) as unknown as Logger;
}
