/**
 * The `Logger` a provider writes to (pino's fits), a silent one, and the
 * trace fields of the active span for a log line.
 *
 * @module
 */
import { trace } from '@opentelemetry/api';

/** One logging method: an object of fields and a message, or a message alone. */
export interface LogFn {
  /** Logs `fields` and an optional message. */
  (fields: Record<string, unknown>, msg?: string): void;
  /** Logs a message alone. */
  (msg: string): void;
}

/**
 * The logger a provider writes to. pino's `Logger` satisfies it, and so does
 * {@link silentLogger}. Tiers (contract §9): nothing at info and above in
 * normal operation; `debug` for one line per operation outcome and one per
 * backend call; `trace` for request parameters, XML and addresses. Never
 * log cloud-init, credentials or upload bodies.
 */
export interface Logger {
  /** Request parameters, XML and addresses: the most detailed tier. */
  trace: LogFn;
  /** One line per operation outcome and per backend call. */
  debug: LogFn;
  /** Information for people; a provider writes none in normal operation. */
  info: LogFn;
  /** Something a person should look at; a provider writes none in normal operation. */
  warn: LogFn;
  /** A failure; a provider reports its failures as errors it throws, not here. */
  error: LogFn;
  /** A logger that adds `bindings` to every line. */
  child(bindings: Record<string, unknown>): Logger;
}

const noop = (): void => {};

/** A logger that writes nothing: the default when none is injected. */
export const silentLogger: Logger = {
  trace: noop,
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};

/**
 * `traceId` and `spanId` of the active span, for log lines; empty when no
 * span is active.
 */
export function traceFields(): { traceId?: string; spanId?: string } {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const ctx = span.spanContext();
  return { traceId: ctx.traceId, spanId: ctx.spanId };
}
