/**
 * The provider's backend logic as the operation shell wants it: a small
 * façade over one module per operation. `createProvider` adds the argument
 * and signal checks, the per-name lock, the error funnel, the redaction of
 * the token and the Checker policy.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import {
  type CheckedCreateRequest,
  type DeleteContext,
  type IdParser,
  type ImplementationChecker,
  type Instance,
  type OperationContext,
  type ProviderDeps,
  type ProviderImplementation,
  type ShellDeps,
  systemClock,
} from '@proxy-op/contract';
import type { ProxmoxApi } from './api.js';
import { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
import { checker } from './check.js';
import { HttpProxmoxApi } from './client.js';
import type { ProxmoxConfig } from './config.js';
import { create } from './create.js';
import { deleteVm } from './delete.js';
import { get } from './get.js';
import { type VmId, vmIds } from './id.js';
import { list } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateApi } from './seam.js';

const INSTRUMENTATION = '@proxy-op/provider-proxmox';

/** What the Proxmox module takes besides the contract's dependencies. */
export interface ProxmoxDeps extends ProviderDeps {
  /**
   * A seam to use instead of the HTTPS client, for tests and for tools that
   * wrap the API themselves. The provider bounds and logs its calls as it
   * does the client's.
   */
  readonly api?: ProxmoxApi | undefined;
  /** Overrides of the wait budgets (tests shrink them). */
  readonly budgets?: Partial<Budgets> | undefined;
}

/**
 * The Proxmox VE implementation. Build a provider with
 * `createProvider(providerModule, name, config, deps)`; building it makes
 * no request.
 */
export class ProxmoxImplementation implements ProviderImplementation<VmId> {
  readonly ids: IdParser<VmId> = vmIds;
  readonly checker: ImplementationChecker;
  readonly #rt: Runtime;
  readonly #client: HttpProxmoxApi | undefined;

  constructor(name: string, config: ProxmoxConfig, deps: ProxmoxDeps & ShellDeps) {
    const log = deps.logger.child({ provider: name });
    if (deps.api === undefined) {
      this.#client = new HttpProxmoxApi({
        url: config.url,
        tokenFile: config.tokenFile,
        caFile: config.caFile,
        insecureSkipTLSVerify: config.insecureSkipTLSVerify,
        requestTimeoutMs: config.requestTimeoutSeconds * 1000,
        secrets: deps.secrets,
        tracer: deps.tracer,
      });
      if (!existsSync(config.tokenFile)) {
        log.warn(
          { tokenFile: config.tokenFile },
          'proxmox token file not found yet; calls fail as Transient until it appears',
        );
      }
    }
    if (config.insecureSkipTLSVerify) {
      log.warn({ url: config.url }, 'proxmox TLS verification is off (insecureSkipTLSVerify)');
    }
    const api = decorateApi(deps.api ?? (this.#client as HttpProxmoxApi), {
      provider: name,
      logger: deps.logger,
      requestTimeoutMs: config.requestTimeoutSeconds * 1000,
      // A seam of the caller's makes no HTTP spans: the decorator makes one per call instead.
      tracer:
        deps.api === undefined ? undefined : (deps.tracer ?? trace.getTracer(INSTRUMENTATION)),
    });
    this.#rt = {
      config,
      api,
      log,
      clock: deps.clock ?? systemClock,
      budgets: { ...DEFAULT_BUDGETS, ...deps.budgets },
    };
    this.checker = checker(this.#rt, deps.secrets);
  }

  /** Create and Delete of one VM share its name's lock. */
  lockKey(id: VmId): string {
    return id.name;
  }

  create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    return create(this.#rt, req, ctx);
  }

  get(id: VmId, ctx: OperationContext): Promise<Instance> {
    return get(this.#rt, id, ctx);
  }

  delete(id: VmId, ctx: DeleteContext): Promise<void> {
    return deleteVm(this.#rt, id, ctx);
  }

  list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    return list(this.#rt, installation, ctx);
  }

  /** Closes the client's idle connections. */
  async close(): Promise<void> {
    await this.#client?.close();
  }
}
