/**
 * The provider's backend logic as the operation shell wants it: the
 * runtime (config, the decorated client, the logger) and the operations
 * bound to it. `createProvider` adds the argument and signal checks, the
 * per-name lock, the error funnel, the redaction of tokens and the Checker
 * policy.
 *
 * @module
 */
import { bindOperations, type ProviderImplementation, type ShellDeps } from '@proxy-op/contract';
import { updateInstanceAuth } from './auth.js';
import { checker } from './check.js';
import { ClientNodeSeam } from './client.js';
import type { KubernetesConfig, KubernetesDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { ids, type KubernetesId } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateSeam } from './seam.js';

/**
 * The Kubernetes implementation. Build a provider with
 * `createProvider(providerModule, name, config, deps)`; building it reads
 * nothing and makes no request.
 */
export function createImplementation(
  name: string,
  config: KubernetesConfig,
  deps: KubernetesDeps & ShellDeps,
): ProviderImplementation<KubernetesId> {
  const client = new ClientNodeSeam({ config, secrets: deps.secrets });
  const rt: Runtime = {
    config,
    seam: decorateSeam(client, {
      provider: name,
      logger: deps.logger,
      tracer: deps.tracer,
      requestTimeoutMs: config.requestTimeoutSeconds * 1000,
    }),
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
  return bindOperations(rt, {
    ids,
    // Create, Delete and UpdateAuth of one Pod share its name's lock.
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances, updateInstanceAuth },
    checker: checker(rt),
    close: () => client.close(),
  });
}
