/**
 * The provider's backend logic as the operation shell wants it: a small
 * façade over one module per operation. `createProvider` adds the argument
 * and signal checks, the per-name lock, the error funnel, the redaction of
 * tokens and the Checker policy.
 *
 * @module
 */
import type {
  CheckedCreateRequest,
  DeleteContext,
  IdParser,
  ImplementationChecker,
  Instance,
  OperationContext,
  ProviderImplementation,
  ShellDeps,
} from '@proxy-op/contract';
import { checker } from './check.js';
import { ClientNodeSeam } from './client.js';
import type { KubernetesConfig, KubernetesDeps } from './config.js';
import { create } from './create.js';
import { deletePod } from './delete.js';
import { get } from './get.js';
import { type PodId, podIds } from './id.js';
import { list } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateSeam } from './seam.js';

/**
 * The Kubernetes implementation. Build a provider with
 * `createProvider(providerModule, name, config, deps)`; building it reads
 * nothing and makes no request.
 */
export class KubernetesImplementation implements ProviderImplementation<PodId> {
  readonly ids: IdParser<PodId> = podIds;
  readonly checker: ImplementationChecker;
  readonly #rt: Runtime;
  readonly #client: ClientNodeSeam;

  constructor(name: string, config: KubernetesConfig, deps: KubernetesDeps & ShellDeps) {
    const client = new ClientNodeSeam({
      config,
      secrets: deps.secrets,
      requestTimeoutMs: config.requestTimeoutSeconds * 1000,
    });
    this.#client = client;
    this.#rt = {
      config,
      seam: decorateSeam(client, { provider: name, logger: deps.logger, tracer: deps.tracer }),
      log: deps.logger.child({ provider: name }),
      address: () => {
        if (config.kubeconfig !== undefined) return `kubeconfig ${config.kubeconfig}`;
        const { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port } = process.env;
        return host === undefined || port === undefined
          ? 'in-cluster (not in a cluster)'
          : `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
      },
      server: () => client.server,
    };
    this.checker = checker(this.#rt);
  }

  /** Create and Delete of one Pod share its name's lock. */
  lockKey(id: PodId): string {
    return id.name;
  }

  create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    return create(this.#rt, req, ctx);
  }

  get(id: PodId, ctx: OperationContext): Promise<Instance> {
    return get(this.#rt, id, ctx);
  }

  delete(id: PodId, ctx: DeleteContext): Promise<void> {
    return deletePod(this.#rt, id, ctx);
  }

  list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    return list(this.#rt, installation, ctx);
  }

  /** Closes the connection pool. */
  close(): Promise<void> {
    return this.#client.close();
  }
}
