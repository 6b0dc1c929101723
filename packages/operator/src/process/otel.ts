/**
 * Traces out: when the standard `OTEL_*` variables ask for it, the
 * OpenTelemetry Node SDK is started and every span (one trace per reconcile,
 * with the providers' `provider.<op>` spans and their backend calls beneath)
 * is exported over OTLP. Metrics stay on `/metrics` and logs on stderr; log
 * lines carry the spans' real trace and span IDs.
 *
 * @module
 */

/** A started SDK: `shutdown` flushes the spans still buffered. */
export interface Tracing {
  /** Flushes the spans not yet exported and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Whether the environment asks for trace export: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or
 * an `OTEL_TRACES_EXPORTER` other than `none`, and `OTEL_SDK_DISABLED` not
 * `true`.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (exporters.length > 0) return !exporters.every((e) => e === 'none');
  return (
    (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '') !== '' ||
    (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '') !== ''
  );
}

/**
 * Starts the OpenTelemetry Node SDK for traces when {@link tracingRequested}
 * says so (the SDK then reads every other `OTEL_*` variable itself: the
 * protocol, headers, sampler, resource attributes); undefined otherwise,
 * and the SDK is not even loaded. The service name defaults to `proxy-op`.
 */
export async function startTracing(
  env: NodeJS.ProcessEnv = process.env,
): Promise<Tracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const named =
    (env.OTEL_SERVICE_NAME ?? '') !== '' ||
    /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    ...(named ? {} : { serviceName: 'proxy-op' }),
    // Traces only: metrics are served on /metrics, logs go to stderr.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
