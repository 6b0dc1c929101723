/**
 * The `aws` provider's backend logic: its runtime (the config, the
 * decorated seam over `@aws-sdk/client-ec2` or the deps' seam, the logger,
 * the recent launches) bound to one module per operation and the Checker
 * with the contract's `bindOperations`. `createProvider` wraps it in the
 * operation shell (argument and signal checks, per-name lock, error
 * funnel, redaction, Checker policy) and in `observe`.
 *
 * @module
 */
import { bindOperations, type ProviderImplementation, type ShellDeps } from '@proxy-op/contract';
import { createEc2Adapter, type Ec2Adapter } from './adapter.js';
import { checker } from './check.js';
import type { AwsConfig, AwsDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { type AwsId, awsId } from './id.js';
import { listInstances } from './list.js';
import type { Runtime } from './runtime.js';
import { decorateSeam, type Ec2Seam } from './seam.js';

/**
 * The `aws` provider's implementation for provider `name`: what the
 * module's `create` returns. Building it makes no request and loads no SDK.
 */
export function createImplementation(
  name: string,
  config: AwsConfig,
  deps: AwsDeps & ShellDeps,
): ProviderImplementation<AwsId> {
  const log = deps.logger.child({ provider: name });
  let adapter: Ec2Adapter | undefined;
  let raw: Ec2Seam;
  if (deps.seam === undefined) {
    adapter = createEc2Adapter({ config, credentials: deps.credentials, secrets: deps.secrets });
    raw = adapter.seam;
  } else {
    raw = deps.seam;
  }
  const seam = decorateSeam(raw, {
    provider: name,
    timeouts: config.timeouts,
    tracer: deps.tracer,
    logger: deps.logger,
    budgeted: adapter !== undefined,
  });
  const rt: Runtime = { config, seam, log, recent: new Map(), launches: new Map() };
  return bindOperations(rt, {
    ids: awsId,
    lockKey: (id) => id.name,
    operations: { createInstance, getInstance, deleteInstance, listInstances },
    checker: checker(rt),
    // Destroys the SDK client the adapter built.
    close: async () => {
      await adapter?.close();
    },
  });
}
