/**
 * The provider's backend logic as the operation shell wants it: the
 * runtime (config, the decorated seam, the logger, the clock, the
 * allocation lock, the spawns in flight) and the operations bound to it.
 * `createProvider` adds the argument and signal checks, the per-name lock,
 * the error funnel and the Checker policy.
 *
 * @module
 */
import {
  bindOperations,
  type ProviderImplementation,
  type ShellDeps,
  systemClock,
} from '@proxy-op/contract';
import { KeyedLock } from '@proxy-op/keyedlock';
import { updateInstanceAuth } from './auth.js';
import { checker } from './check.js';
import type { LocalConfig, LocalDeps } from './config.js';
import { createInstance } from './create.js';
import { deleteInstance } from './delete.js';
import { getInstance } from './get.js';
import { type LocalId, localId } from './id.js';
import { listInstances } from './list.js';
import { createProcessSeam } from './process.js';
import type { Runtime } from './runtime.js';
import { decorateSeam } from './seam.js';

/**
 * The `local` implementation. Build a provider with
 * `createProvider(providerModule, name, config, deps)`; building it
 * touches no file and starts no process.
 */
export function createImplementation(
  name: string,
  config: LocalConfig,
  deps: LocalDeps & ShellDeps,
): ProviderImplementation<LocalId> {
  const rt: Runtime = {
    config,
    seam: decorateSeam(deps.seam ?? createProcessSeam(config), {
      provider: name,
      logger: deps.logger,
      tracer: deps.tracer,
      timeouts: config.timeouts,
    }),
    log: deps.logger.child({ provider: name }),
    clock: deps.clock ?? systemClock,
    allocation: new KeyedLock<string>(),
    spawning: new Map(),
  };
  return bindOperations(rt, {
    ids: localId,
    // Create and Delete of one instance share its name's lock.
    lockKey: (id) => id.name,
    operations: {
      createInstance,
      getInstance,
      deleteInstance,
      listInstances,
      updateInstanceAuth,
    },
    checker: checker(rt),
  });
}
