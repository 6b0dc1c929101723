/**
 * The `gcp` provider's backend logic: its runtime (the config, the
 * decorated seam over `@google-cloud/compute` or the deps' seam, the
 * logger) bound to one module per operation and the Checker with the
 * contract's `bindOperations`. `createProvider` wraps it in the operation
 * shell (argument and signal checks, per-name lock, error funnel,
 * redaction, Checker policy) and in `observe`.
 *
 * @module
 */
import { bindOperations, type ProviderImplementation, type ShellDeps } from '@proxy-op/contract';
import { type ComputeAdapter, createComputeAdapter } from './adapter.js';
import { checker } from './check.js';
import type { GcpConfig, GcpDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { type GcpId, gcpId } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';
import { type ComputeSeam, decorateSeam } from './seam.js';

/**
 * The `gcp` provider's implementation for provider `name`: what the
 * module's `create` returns. Building it makes no request and loads no SDK.
 */
export function createImplementation(
  name: string,
  config: GcpConfig,
  deps: GcpDeps & ShellDeps,
): ProviderImplementation<GcpId> {
  const log = deps.logger.child({ provider: name });
  let adapter: ComputeAdapter | undefined;
  let raw: ComputeSeam;
  if (deps.seam === undefined) {
    adapter = createComputeAdapter({ config, auth: deps.auth, secrets: deps.secrets });
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
    ids: gcpId,
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances },
    checker: checker(rt),
    // Closes the SDK clients the adapter built.
    close: async () => {
      await adapter?.close();
    },
  });
}
