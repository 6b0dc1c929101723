/**
 * The observe decorator: spans, metrics and log lines for every operation
 * of a provider (`observe`) and for every backend call of a seam
 * (`observeSeam`, with the per-call budget), with the attribute, metric and
 * span names they use.
 *
 * @module
 */
import {
  type Attributes,
  type Meter,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { CallOptions } from './abort.js';
import { budgetSeam, type SeamBudget } from './budget.js';
import { type Operation, ProviderError } from './errors.js';
import { toOperationError } from './funnel.js';
import { type Logger, silentLogger, traceFields } from './logger.js';
import type { CreateRequest, DeleteOptions, ListOptions, Provider, TargetResult } from './types.js';

const INSTRUMENTATION = '@proxy-op/contract';

/** Attribute keys on spans and metrics. */
export const Attr = {
  ProviderName: 'proxy_op.provider.name',
  ProviderType: 'proxy_op.provider.type',
  Operation: 'proxy_op.operation',
  ErrorClass: 'proxy_op.error.class',
  Outcome: 'proxy_op.outcome',
  InstanceId: 'proxy_op.instance.id',
  InstanceName: 'proxy_op.instance.name',
} as const;

/** Metric names written by {@link observe}. */
export const Metric = {
  Operations: 'proxy_op.provider.operations',
  Duration: 'proxy_op.provider.operation.duration',
} as const;

/** Span names written by {@link observe}, by operation. */
export const SpanName = {
  create: 'provider.create',
  get: 'provider.get',
  delete: 'provider.delete',
  list: 'provider.list',
  updateAuth: 'provider.updateAuth',
  check: 'providerhealth.check',
} as const;

/** Where {@link observe} and {@link observeSeam} send their signals. */
export interface Telemetry {
  /** The tracer for spans; the global tracer provider's when omitted. */
  readonly tracer?: Tracer | undefined;
  /** The meter for the operation metrics; the global meter provider's when omitted. */
  readonly meter?: Meter | undefined;
  /** The logger for the tiered log lines; silent when omitted. */
  readonly logger?: Logger | undefined;
}

/**
 * Wraps a provider with the contract's observability (§9): one span per
 * operation carrying the provider's name and type and, on failure, the error
 * class; an operation counter and a duration histogram; one debug log line
 * per outcome with `traceId` and `spanId`. Failures pass through the same
 * funnel as the operation shell's ({@link toOperationError}, with
 * `TypeError` as misuse), so a plain provider's errors leave as
 * ProviderErrors too. `createProvider` applies it over the shell.
 */
export function observe(provider: Provider, telemetry: Telemetry = {}): Provider {
  const tracer = telemetry.tracer ?? trace.getTracer(INSTRUMENTATION);
  const meter = telemetry.meter ?? metrics.getMeter(INSTRUMENTATION);
  const logger = (telemetry.logger ?? silentLogger).child({
    provider: provider.name,
    type: provider.type,
  });
  const counter = meter.createCounter(Metric.Operations, {
    description: 'Provider operations by outcome',
    unit: '{operation}',
  });
  const histogram = meter.createHistogram(Metric.Duration, {
    description: 'Provider operation duration',
    unit: 's',
  });
  const base: Attributes = {
    [Attr.ProviderName]: provider.name,
    [Attr.ProviderType]: provider.type,
  };

  function run<T>(
    op: Operation & keyof typeof SpanName,
    signal: AbortSignal | undefined,
    extra: Attributes,
    fields: Record<string, unknown>,
    fn: () => Promise<T>,
  ): Promise<T> {
    const attributes: Attributes = { ...base, [Attr.Operation]: op, ...extra };
    return tracer.startActiveSpan(
      SpanName[op],
      { kind: SpanKind.INTERNAL, attributes },
      async (span: Span) => {
        const start = performance.now();
        try {
          const result = await fn();
          const seconds = (performance.now() - start) / 1000;
          counter.add(1, { ...base, [Attr.Operation]: op, [Attr.Outcome]: 'success' });
          histogram.record(seconds, { ...base, [Attr.Operation]: op, [Attr.Outcome]: 'success' });
          logger.debug(
            { ...traceFields(), op, ...fields, durationMs: Math.round(seconds * 1000) },
            `provider ${op} succeeded`,
          );
          return result;
        } catch (thrown) {
          const seconds = (performance.now() - start) / 1000;
          const err = normalise(provider.name, op, signal, thrown);
          if (ProviderError.isInstance(err)) {
            span.setAttribute(Attr.ErrorClass, err.errorClass);
            span.setStatus({ code: SpanStatusCode.ERROR, message: err.code });
            counter.add(1, { ...base, [Attr.Operation]: op, [Attr.Outcome]: err.errorClass });
            histogram.record(seconds, {
              ...base,
              [Attr.Operation]: op,
              [Attr.Outcome]: err.errorClass,
            });
            logger.debug(
              {
                ...traceFields(),
                op,
                ...fields,
                durationMs: Math.round(seconds * 1000),
                errorClass: err.errorClass,
                code: err.code,
                error: err.message,
              },
              `provider ${op} failed`,
            );
          } else {
            span.setStatus({ code: SpanStatusCode.ERROR, message: 'misuse' });
          }
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  const observed: Provider = {
    name: provider.name,
    type: provider.type,
    create(req: CreateRequest, opts?: CallOptions) {
      return run(
        'create',
        opts?.signal,
        { [Attr.InstanceName]: String(req?.name) },
        { name: req?.name, namespace: req?.namespace, uid: req?.uid },
        () => provider.create(req, opts),
      );
    },
    get(id: string, opts?: CallOptions) {
      return run('get', opts?.signal, { [Attr.InstanceId]: String(id) }, { id }, () =>
        provider.get(id, opts),
      );
    },
    delete(id: string, opts?: DeleteOptions) {
      return run('delete', opts?.signal, { [Attr.InstanceId]: String(id) }, { id }, () =>
        provider.delete(id, opts),
      );
    },
    listByTag(opts?: ListOptions) {
      return run('list', opts?.signal, {}, {}, () => provider.listByTag(opts));
    },
  };
  const updateAuth = provider.updateAuth?.bind(provider);
  if (updateAuth !== undefined) {
    (observed as { updateAuth: Provider['updateAuth'] }).updateAuth = (id, auth, opts) =>
      run('updateAuth', opts?.signal, { [Attr.InstanceId]: String(id) }, { id }, () =>
        updateAuth(id, auth, opts),
      );
  }
  const check = provider.check?.bind(provider);
  if (check !== undefined) {
    (observed as { check: Provider['check'] }).check = (opts?: CallOptions) =>
      run<TargetResult[]>('check', opts?.signal, {}, {}, () => check(opts));
  }
  const close = provider.close?.bind(provider);
  if (close !== undefined) (observed as { close: Provider['close'] }).close = () => close();
  return observed;
}

function normalise(
  provider: string,
  op: Operation,
  signal: AbortSignal | undefined,
  thrown: unknown,
): unknown {
  return toOperationError(thrown, { provider, op, signal, typeErrors: 'misuse' });
}

/**
 * Runs `fn` inside a child span named `name`, but only when a span is
 * already active: background traffic makes no root spans (parent-gated).
 * The span is a CLIENT span; it ends when `fn` settles and is marked as an
 * error when `fn` rejects.
 */
export function withChildSpan<T>(
  tracer: Tracer,
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  if (trace.getActiveSpan() === undefined) return fn();
  return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: ProviderError.isInstance(err) ? err.code : 'error',
      });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Options of {@link observeSeam}. */
export interface ObserveSeamOptions extends Telemetry {
  /** Span and log prefix, e.g. `kvm2` gives spans `kvm2.DomainLookupByName`. */
  readonly prefix: string;
  /** The configured provider name, for log lines. */
  readonly provider: string;
  /**
   * Safe identifiers of a call for its log line and span (names, IDs);
   * arguments are never logged otherwise, since they may hold cloud-init or
   * upload bodies.
   */
  readonly fields?: (method: string, args: readonly unknown[]) => Record<string, string | number>;
  /**
   * Safe facts about a failed call for its log line (status, code). By
   * default only the error's name and `code`: a backend's message may echo
   * a credential or a request body, so it is left out unless this says so.
   */
  readonly errorFields?: (err: unknown) => Record<string, string | number>;
  /**
   * The per-call budget ({@link budgetSeam}): each call's signal (where the
   * caller passed one, else the method's last declared parameter) is joined
   * with a timeout of the method's budget, and a call past it is aborted and
   * rejects with a `BudgetError`, which its span and log line record.
   * Omitted: the caller's signal only.
   */
  readonly budget?: SeamBudget | undefined;
}

/** The default {@link ObserveSeamOptions.errorFields}: the error's name and string `code`, never its message. */
export function defaultErrorFields(err: unknown): Record<string, string | number> {
  if (!(err instanceof Error)) return { error: typeof err };
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' || typeof code === 'number'
    ? { error: err.name, errorCode: code }
    : { error: err.name };
}

/**
 * Decorates a backend seam (an object whose methods are the backend calls a
 * provider makes): every method call gets a parent-gated child span and one
 * debug log line with the call name, the safe identifiers, the duration and
 * the error, and, with `budget`, its per-call budget. Apply it once where
 * the production adapter is built, so provider code never holds an
 * undecorated seam.
 */
export function observeSeam<S extends object>(seam: S, options: ObserveSeamOptions): S {
  const inner = options.budget === undefined ? seam : budgetSeam(seam, options.budget);
  const tracer = options.tracer ?? trace.getTracer(INSTRUMENTATION);
  const logger = (options.logger ?? silentLogger).child({ provider: options.provider });
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const method = prop;
      return (...args: unknown[]) => {
        const ids = options.fields?.(method, args) ?? {};
        const start = performance.now();
        return withChildSpan(tracer, `${options.prefix}.${method}`, ids, async () => {
          try {
            const result: unknown = await (value as (...a: unknown[]) => unknown).apply(
              target,
              args,
            );
            logger.debug(
              { ...traceFields(), call: method, ...ids, durationMs: elapsed(start) },
              `${options.prefix} call`,
            );
            return result;
          } catch (err) {
            logger.debug(
              {
                ...traceFields(),
                call: method,
                ...ids,
                durationMs: elapsed(start),
                ...(options.errorFields ?? defaultErrorFields)(err),
              },
              `${options.prefix} call`,
            );
            throw err;
          }
        });
      };
    },
  });
}

function elapsed(start: number): number {
  return Math.round((performance.now() - start) * 10) / 10;
}
