/**
 * The seam: one signal-taking method per API call the provider makes,
 * and the decorator that gives each call a child span and a debug line.
 *
 * @module
 */
import type { V1Pod, V1PodList, V1Secret } from '@kubernetes/client-node';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from '@proxy-op/contract';
import { defaultErrorFields, observeSeam } from '@proxy-op/contract';
import { KubernetesApiError, KubernetesConnectionError } from './errors.js';

/** Where a call acts: a namespace and, for one object, its name. */
export interface Target {
  readonly namespace: string;
  readonly name: string;
}

/** What `/version` answers. */
export interface ServerVersion {
  readonly gitVersion: string;
}

/** A Proxy as the owner lookup needs it. */
export interface ProxyRef {
  readonly name: string;
  readonly uid: string;
}

/** The API calls of the provider; each is one HTTP request. */
export interface KubernetesSeam {
  /** `GET /version`. */
  version(signal?: AbortSignal): Promise<ServerVersion>;
  /** `POST .../pods`: the created Pod as the server stored it. */
  createPod(at: { readonly namespace: string }, pod: V1Pod, signal?: AbortSignal): Promise<V1Pod>;
  /** `POST .../pods?dryRun=All`: admission and RBAC run, nothing is stored. */
  dryRunCreatePod(
    at: { readonly namespace: string },
    pod: V1Pod,
    signal?: AbortSignal,
  ): Promise<V1Pod>;
  /** `GET .../pods/<name>`. */
  readPod(at: Target, signal?: AbortSignal): Promise<V1Pod>;
  /** `DELETE .../pods/<name>` with a UID precondition: only that very Pod is deleted. */
  deletePod(at: Target, uid: string, signal?: AbortSignal): Promise<void>;
  /** `GET .../pods?labelSelector=...` in one namespace, or across all when `namespace` is undefined. */
  listPods(
    at: {
      readonly namespace?: string | undefined;
      readonly labelSelector: string;
      readonly limit?: number | undefined;
    },
    signal?: AbortSignal,
  ): Promise<V1PodList>;
  /** `POST .../secrets`: a proxy's password file. */
  createSecret(
    at: { readonly namespace: string },
    secret: V1Secret,
    signal?: AbortSignal,
  ): Promise<V1Secret>;
  /** `GET .../secrets/<name>`. */
  readSecret(at: Target, signal?: AbortSignal): Promise<V1Secret>;
  /** `PUT .../secrets/<name>`, with the `resourceVersion` the Secret carries: a stale one is a 409. */
  replaceSecret(at: Target, secret: V1Secret, signal?: AbortSignal): Promise<V1Secret>;
  /** `GET /apis/proxy-op.io/v1alpha1/namespaces/<ns>/proxies`: the Proxies' names and UIDs. */
  listProxies(at: { readonly namespace: string }, signal?: AbortSignal): Promise<ProxyRef[]>;
}

/** Options of {@link decorateSeam}. */
export interface DecorateOptions {
  readonly provider: string;
  readonly logger: Logger;
  readonly tracer?: Tracer | undefined;
  /** One request's budget in ms, answer included (`requestTimeoutSeconds`). */
  readonly requestTimeoutMs: number;
}

/**
 * Every call bounded by the per-call budget (past it, the request is
 * aborted and the call rejects with the contract's `BudgetError`), a
 * `kubernetes.<call>` child span (under an operation span only) and one
 * debug line with its namespace and name, duration and, on failure, the
 * HTTP status and Status reason; never a body.
 */
export function decorateSeam(seam: KubernetesSeam, o: DecorateOptions): KubernetesSeam {
  return observeSeam(seam, {
    prefix: 'kubernetes',
    provider: o.provider,
    logger: o.logger,
    tracer: o.tracer,
    budget: (method) => (method === 'close' ? undefined : o.requestTimeoutMs),
    fields: (_method, args) => {
      const at = args[0];
      if (at === null || typeof at !== 'object') return {};
      const out: Record<string, string> = {};
      const { namespace, name } = at as { namespace?: unknown; name?: unknown };
      if (typeof namespace === 'string') out.namespace = namespace;
      if (typeof name === 'string') out.name = name;
      return out;
    },
    errorFields: (err) => {
      if (KubernetesApiError.isInstance(err)) return { httpStatus: err.status, reason: err.reason };
      if (KubernetesConnectionError.isInstance(err)) {
        return { error: err.name, errorCode: err.errorCode ?? '' };
      }
      return defaultErrorFields(err);
    },
  });
}
