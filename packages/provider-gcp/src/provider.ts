/**
 * The `gcp` provider's backend logic: a small façade over one file per
 * operation. `createProvider` wraps it in the contract's operation shell
 * (argument and signal checks, per-name lock, error funnel, redaction,
 * Checker policy) and in `observe`.
 *
 * @module
 */
import {
  type CheckedCreateRequest,
  type DeleteContext,
  type ImplementationChecker,
  type Instance,
  type Logger,
  type OperationContext,
  observeSeam,
  type ProviderDeps,
  type ProviderImplementation,
  type ShellDeps,
} from '@proxy-op/contract';
import { createComputeAdapter, type GcpAuth } from './adapter.js';
import { USER_DATA_KEY } from './build.js';
import { checkProject, checkTargets } from './check.js';
import type { GcpConfig } from './config.js';
import type { GcpContext } from './context.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { errorFields } from './errors.js';
import { getInstance } from './get.js';
import { type GcpId, gcpId, lastSegment } from './ids.js';
import { listInstances } from './list.js';
import type { ComputeSeam } from './seam.js';

/** What the `gcp` provider is built with, besides the contract's dependencies. */
export interface GcpProviderDeps extends ProviderDeps {
  /**
   * The credentials: a `GoogleAuth` or an `AuthClient` of
   * `google-auth-library`. Unset: `gcp.credentialsFile`, else Application
   * Default Credentials.
   */
  readonly auth?: GcpAuth | undefined;
  /**
   * The Compute calls to use instead of `@google-cloud/compute` (tests wrap
   * or fake it). The provider decorates it with its spans and log lines.
   */
  readonly seam?: ComputeSeam | undefined;
}

/** Safe identifiers of a seam call, for its span and log line. */
export function seamFields(method: string, args: readonly unknown[]): Record<string, string> {
  const [a, b] = args;
  const name = (x: unknown) =>
    typeof x === 'object' && x !== null && typeof (x as { name?: unknown }).name === 'string'
      ? (x as { name: string }).name
      : undefined;
  switch (method) {
    case 'getInstance':
    case 'deleteInstance':
      return { zone: String(a), name: String(b) };
    case 'insertInstance':
      return { zone: String(a), name: name(b) ?? '' };
    case 'listInstanceOperations':
      return { zone: String(a), name: lastSegment(String(b)) };
    case 'deleteOperation':
      return { zone: String(a), operation: String(b) };
    case 'getFirewall':
    case 'deleteFirewall':
      return { firewall: String(a) };
    case 'insertFirewall':
      return { firewall: name(a) ?? '' };
    default:
      return {};
  }
}

/**
 * The wire log: one trace line per call with its identifiers and, when
 * `logPayloads` is set, its request body, the user-data always elided.
 */
export function wireLogged(seam: ComputeSeam, log: Logger, logPayloads: boolean): ComputeSeam {
  return new Proxy(seam, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        const fields: Record<string, unknown> = { call: prop, ...seamFields(prop, args) };
        const body = args.find(
          (x) => typeof x === 'object' && x !== null && !(x instanceof AbortSignal),
        );
        if (logPayloads && body !== undefined) fields.body = elideUserData(body);
        log.trace(fields, 'gcp request');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A copy of a request body with every user-data metadata value replaced by its size. */
export function elideUserData(body: unknown): unknown {
  const items = (body as { metadata?: { items?: unknown } }).metadata?.items;
  if (!Array.isArray(items)) return body;
  return {
    ...(body as object),
    metadata: {
      items: items.map((i: { key?: unknown; value?: unknown }) =>
        i?.key === USER_DATA_KEY && typeof i.value === 'string'
          ? { key: i.key, value: `<${Buffer.byteLength(i.value)} bytes elided>` }
          : i,
      ),
    },
  };
}

/** The `gcp` provider's backend logic. Build it with `createProvider(providerModule, name, config)`. */
export class GcpImplementation implements ProviderImplementation<GcpId> {
  readonly ids = gcpId;
  readonly #c: GcpContext;
  readonly #close: () => Promise<void>;

  constructor(name: string, config: GcpConfig, deps: GcpProviderDeps & ShellDeps) {
    const log = deps.logger.child({ provider: name });
    let raw: ComputeSeam;
    if (deps.seam !== undefined) {
      raw = deps.seam;
      this.#close = async () => {};
    } else {
      const adapter = createComputeAdapter({ config, auth: deps.auth, secrets: deps.secrets });
      raw = adapter.seam;
      this.#close = () => adapter.close();
    }
    const seam = observeSeam(wireLogged(raw, log, config.logPayloads), {
      prefix: 'gcp',
      provider: name,
      tracer: deps.tracer,
      logger: deps.logger,
      fields: seamFields,
      errorFields,
    });
    this.#c = { config, seam, log };
  }

  lockKey(id: GcpId): string {
    return id.name;
  }

  create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    return createInstance(this.#c, req, ctx);
  }

  get(id: GcpId, ctx: OperationContext): Promise<Instance> {
    return getInstance(this.#c, id, ctx);
  }

  delete(id: GcpId, ctx: DeleteContext): Promise<void> {
    return deleteInstance(this.#c, id, ctx);
  }

  list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    return listInstances(this.#c, installation, ctx);
  }

  readonly checker: ImplementationChecker = {
    targets: () => checkTargets(this.#c),
    check: (_target, ctx) => checkProject(this.#c, ctx),
  };

  /** Closes the SDK clients. */
  close(): Promise<void> {
    return this.#close();
  }
}
