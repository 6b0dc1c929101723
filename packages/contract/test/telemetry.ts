// Test support: a real OpenTelemetry SDK pipeline (in-memory exporter, AsyncLocalStorage
// context) and a logger that records lines.
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Logger } from '../src/index.js';

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export function telemetry() {
  context.disable();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    tracer: tracerProvider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
    spans: () => exporter.getFinishedSpans(),
    async metrics() {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    },
    reset: () => exporter.reset(),
  };
}

export interface LogLine {
  level: string;
  fields: Record<string, unknown>;
  msg: string | undefined;
}

export function recordingLogger(
  lines: LogLine[] = [],
  bound: Record<string, unknown> = {},
): Logger {
  const at =
    (level: string) =>
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
    child: (b) => recordingLogger(lines, { ...bound, ...b }),
  };
}

export { metrics, trace };
