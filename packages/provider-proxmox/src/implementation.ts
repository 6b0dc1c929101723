/**
 * The provider's backend logic as the operation shell wants it: the
 * runtime (config, the decorated seam, the logger, the clock, the budgets)
 * and the operations bound to it. `createProvider` adds the argument and
 * signal checks, the per-name lock, the error funnel, the redaction of the
 * token and the Checker policy.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import {
  bindOperations,
  type ProviderImplementation,
  type ShellDeps,
  systemClock,
} from '@proxy-op/contract';
import { updateInstanceAuth } from './auth.js';
import { DEFAULT_BUDGETS } from './budgets.js';
import { checker } from './check.js';
import { HttpProxmoxApi } from './client.js';
import type { ProxmoxConfig, ProxmoxDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { ids, type ProxmoxId } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateApi } from './seam.js';

const INSTRUMENTATION = '@proxy-op/provider-proxmox';

/**
 * The Proxmox VE implementation. Build a provider with
 * `createProvider(providerModule, name, config, deps)`; building it makes
 * no request.
 */
export function createImplementation(
  name: string,
  config: ProxmoxConfig,
  deps: ProxmoxDeps & ShellDeps,
): ProviderImplementation<ProxmoxId> {
  const log = deps.logger.child({ provider: name });
  let client: HttpProxmoxApi | undefined;
  if (deps.api === undefined) {
    client = new HttpProxmoxApi({
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
  const api = decorateApi(deps.api ?? (client as HttpProxmoxApi), {
    provider: name,
    logger: deps.logger,
    requestTimeoutMs: config.requestTimeoutSeconds * 1000,
    // A seam of the caller's makes no HTTP spans: the decorator makes one per call instead.
    tracer: deps.api === undefined ? undefined : (deps.tracer ?? trace.getTracer(INSTRUMENTATION)),
  });
  const rt: Runtime = {
    config,
    api,
    log,
    clock: deps.clock ?? systemClock,
    budgets: { ...DEFAULT_BUDGETS, ...deps.budgets },
  };
  return bindOperations(rt, {
    ids,
    // Create and Delete of one VM share its name's lock.
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances, updateInstanceAuth },
    checker: checker(rt, deps.secrets),
    // Closes the client's idle connections.
    close: async () => {
      await client?.close();
    },
  });
}
