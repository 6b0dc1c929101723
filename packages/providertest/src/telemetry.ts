/**
 * Recorders of what a provider emits during the suite: its log lines and
 * its spans, and the dependencies a fixture builds the provider with.
 *
 * @module
 */
import { context, type Meter, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Logger } from '@proxy-op/contract';

/** One recorded log line. */
export interface LogLine {
  /** The level the line was logged at. */
  readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  /** The line's fields, with every `child()` binding merged in. */
  readonly fields: Readonly<Record<string, unknown>>;
  /** The message, when the line had one. */
  readonly msg: string | undefined;
}

/** A logger that records every line at every level, for assertions. */
export interface LogSink {
  /** The logger to hand the provider. */
  readonly logger: Logger;
  /** Every line so far, in order. */
  readonly lines: readonly LogLine[];
  /** Every line as one JSON text, for "never contains" checks. */
  text(): string;
  /** Forgets the lines so far. */
  clear(): void;
}

/** Makes a {@link LogSink}. */
export function createLogSink(): LogSink {
  const lines: LogLine[] = [];
  const make = (bound: Record<string, unknown>): Logger => {
    const at =
      (level: LogLine['level']) =>
      (a: Record<string, unknown> | string, msg?: string): void => {
        if (typeof a === 'string') lines.push({ level, fields: { ...bound }, msg: a });
        else lines.push({ level, fields: { ...bound, ...a }, msg });
      };
    return {
      trace: at('trace'),
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (b) => make({ ...bound, ...b }),
    };
  };
  return {
    logger: make({}),
    lines,
    text: () => lines.map((l) => safeJson(l)).join('\n'),
    clear: () => {
      lines.length = 0;
    },
  };
}

/** Finished spans from a real OpenTelemetry SDK pipeline (in-memory exporter). */
export interface SpanRecorder {
  /** The tracer to hand the provider. */
  readonly tracer: Tracer;
  /** Every finished span so far, in the order they ended. */
  spans(): readonly ReadableSpan[];
  /** Names, attributes, events and status messages of every span as one text. */
  text(): string;
  /** Forgets the spans so far. */
  clear(): void;
}

let contextManagerInstalled = false;

/**
 * Makes a {@link SpanRecorder}: the SDK's TracerProvider with an
 * in-memory exporter. Installs an AsyncLocalStorage context manager globally
 * (once) so spans nest across `await`, as they do in an application with
 * the SDK.
 */
export function createSpanRecorder(): SpanRecorder {
  if (!contextManagerInstalled) {
    const ok = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    if (!ok) {
      // Another context manager is already installed (the application's); it nests spans too.
    }
    contextManagerInstalled = true;
  }
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return {
    tracer: provider.getTracer('@proxy-op/providertest'),
    spans: () => exporter.getFinishedSpans(),
    text: () =>
      exporter
        .getFinishedSpans()
        .map((s) =>
          safeJson({
            name: s.name,
            attributes: s.attributes,
            status: s.status,
            events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
          }),
        )
        .join('\n'),
    clear: () => exporter.reset(),
  };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, val: unknown) =>
      val instanceof Uint8Array ? Buffer.from(val).toString('latin1') : val,
    );
  } catch {
    return String(v);
  }
}

/** What the suite hands the factory, to wire into the provider it builds. */
export interface ConformanceDeps {
  /** The logger whose lines the suite checks. */
  readonly logger: Logger;
  /** The tracer whose spans the suite checks. */
  readonly tracer: Tracer;
  /** A meter, when the suite has one for the provider. */
  readonly meter?: Meter | undefined;
}
