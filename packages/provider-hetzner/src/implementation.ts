/**
 * The `hetzner` provider's backend logic: its runtime (the config, the
 * decorated seam over the Hetzner Cloud API or the deps' seam, the
 * logger) bound to one module per operation and the Checker with the
 * contract's `bindOperations`. `createProvider` wraps it in the operation
 * shell (argument and signal checks, per-name lock, error funnel,
 * redaction, Checker policy) and in `observe`.
 *
 * @module
 */
import { bindOperations, type ProviderImplementation, type ShellDeps } from '@proxy-op/contract';
import { createHetznerAdapter, type HetznerAdapter } from './adapter.js';
import { checker } from './check.js';
import type { HetznerConfig, HetznerDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { type HetznerId, hetznerId } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateSeam, type HetznerSeam } from './seam.js';

/**
 * The `hetzner` provider's implementation for provider `name`: what the
 * module's `create` returns. Building it makes no request and reads no file.
 */
export function createImplementation(
  name: string,
  config: HetznerConfig,
  deps: HetznerDeps & ShellDeps,
): ProviderImplementation<HetznerId> {
  const log = deps.logger.child({ provider: name });
  let adapter: HetznerAdapter | undefined;
  let raw: HetznerSeam;
  if (deps.seam === undefined) {
    adapter = createHetznerAdapter({
      endpoint: config.endpoint,
      tokenFile: config.tokenFile,
      secrets: deps.secrets,
    });
    raw = adapter.seam;
  } else {
    raw = deps.seam;
  }
  const seam = decorateSeam(raw, {
    provider: name,
    config,
    log,
    tracer: deps.tracer,
    logger: deps.logger,
    budgeted: adapter !== undefined,
  });
  const rt: Runtime = { config, seam, log };
  return bindOperations(rt, {
    ids: hetznerId,
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances },
    checker: checker(rt),
    // Closes the client's keep-alive connections.
    close: async () => {
      await adapter?.close();
    },
  });
}
