/**
 * What the provider wraps around whichever seam it talks to (the HTTPS
 * client or an injected one): the per-call budget and the one debug line
 * per call.
 *
 * @module
 */
import { ProxyTracerProvider, type Tracer } from '@opentelemetry/api';
import { type Logger, observeSeam } from '@proxy-op/contract';
import { API_METHODS, ApiError, type ProxmoxApi } from './api.js';

/** Safe identifiers of a seam call, for its log line: never a description, body or token. */
const SAFE_FIELDS = [
  'node',
  'vmid',
  'storage',
  'upid',
  'newid',
  'name',
  'filename',
  'volid',
  'disk',
];

/** The seam methods that take no request object: their signal is the first argument. */
const SIGNAL_FIRST: ReadonlySet<string> = new Set(['version', 'clusterResources']);
const METHODS: ReadonlySet<string> = new Set(API_METHODS);

// The HTTPS client makes the HTTP spans itself; over it the decorator is
// given a tracer that records nothing, so no call is traced twice.
const NO_SPANS = new ProxyTracerProvider().getTracer('@proxy-op/provider-proxmox/seam');

/** Options of {@link decorateApi}. */
export interface DecorateOptions {
  /** The configured provider name, on every line. */
  readonly provider: string;
  readonly logger: Logger;
  /** Every call's budget in ms, answer included (`requestTimeoutSeconds`); 0 for none. */
  readonly requestTimeoutMs: number;
  /**
   * Makes one `proxmox.<method>` child span per call. Give it only for a
   * seam that makes no spans of its own: the HTTPS client makes
   * `HTTP <METHOD>` spans.
   */
  readonly tracer?: Tracer | undefined;
}

/**
 * Wraps a seam: each call is bounded by `requestTimeoutMs` (a call past it
 * rejects with the timeout's `TimeoutError`, whatever the seam does) and
 * logs one debug line with the call name, the safe identifiers, the
 * duration and, on failure, the HTTP status and the API's message; with
 * `tracer`, each call is also a child span.
 */
export function decorateApi(api: ProxmoxApi, options: DecorateOptions): ProxmoxApi {
  return observeSeam(bounded(api, options.requestTimeoutMs), {
    prefix: 'proxmox',
    provider: options.provider,
    logger: options.logger,
    tracer: options.tracer ?? NO_SPANS,
    fields: (_method, args) => {
      const out: Record<string, string | number> = {};
      const first = args[0];
      if (typeof first === 'object' && first !== null && !(first instanceof AbortSignal)) {
        for (const key of SAFE_FIELDS) {
          const v = (first as Record<string, unknown>)[key];
          if (typeof v === 'string' || typeof v === 'number') out[key] = v;
        }
      }
      return out;
    },
    errorFields: (err) =>
      err instanceof ApiError
        ? { error: err.name, httpStatus: err.status, apiMessage: err.apiMessage }
        : {
            error: err instanceof Error ? err.name : typeof err,
            ...(typeof (err as { code?: unknown })?.code === 'string'
              ? { errorCode: (err as { code: string }).code }
              : {}),
          },
  });
}

/** The seam with every call's signal joined to a timeout of `ms`. */
function bounded(api: ProxmoxApi, ms: number): ProxmoxApi {
  if (ms <= 0) return api;
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string' || !METHODS.has(prop)) {
        return value;
      }
      const at = SIGNAL_FIRST.has(prop) ? 0 : 1;
      return (...args: unknown[]) => {
        const call = [...args];
        const outer = call[at] as AbortSignal | undefined;
        const timeout = AbortSignal.timeout(ms);
        call[at] = outer === undefined ? timeout : AbortSignal.any([outer, timeout]);
        return (value as (...a: unknown[]) => unknown).apply(target, call);
      };
    },
  });
}
