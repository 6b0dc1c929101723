/**
 * The façade of a provider, written once: a provider keeps each operation
 * in a module of its own (`create.ts`, `get.ts`, `delete.ts`, `list.ts`)
 * as a function of its runtime (config, seam, logger), and
 * {@link bindOperations} binds them to one runtime as the
 * {@link ProviderImplementation} the module's `create` returns.
 *
 * @module
 */

import type { ImplementationChecker } from './checker.js';
import type { DeleteContext, OperationContext } from './context.js';
import type { CheckedCreateRequest } from './request.js';
import type { IdParser, ProviderImplementation } from './shell.js';
import type { Instance, ProxyAuth } from './types.js';

/**
 * The four operations of a provider as functions of its runtime `R`, under
 * the names their modules export them by (so a provider passes
 * `{ createInstance, getInstance, deleteInstance, listInstances }`).
 */
export interface Operations<R, Id> {
  /** Creates or adopts the instance (`create.ts`). */
  createInstance(rt: R, req: CheckedCreateRequest, ctx: OperationContext): Promise<string>;
  /** Reads the instance back (`get.ts`). */
  getInstance(rt: R, id: Id, ctx: OperationContext): Promise<Instance>;
  /** Deletes the instance, leaving alone one that is not the caller's (`delete.ts`). */
  deleteInstance(rt: R, id: Id, ctx: DeleteContext): Promise<void>;
  /** Every instance marked for `installation` (`list.ts`). */
  listInstances(rt: R, installation: string, ctx: OperationContext): Promise<Instance[]>;
  /** Replaces a running instance's password file (`auth.ts`), for in-place rotation (§4.20). */
  updateInstanceAuth?(rt: R, id: Id, auth: ProxyAuth, ctx: OperationContext): Promise<void>;
}

/** What {@link bindOperations} builds an implementation from, besides the runtime. */
export interface ImplementationParts<R, Id> {
  /** Strict ID parsing (§6). */
  readonly ids: IdParser<Id>;
  /** The per-instance lock key of an ID: the instance name Create locks on. */
  lockKey(id: Id): string;
  /** The four operations. */
  readonly operations: Operations<R, Id>;
  /** The Checker, when the provider has one. */
  readonly checker?: ImplementationChecker | undefined;
  /** Releases connections and timers. */
  close?(): Promise<void>;
}

/**
 * The {@link ProviderImplementation} of `operations` bound to the runtime
 * `rt`: what a provider module's `create` returns. The result is frozen.
 *
 * ```ts
 * create: (name, config, deps) => {
 *   const rt = runtime(name, config, deps);
 *   return bindOperations(rt, {
 *     ids,
 *     lockKey: (id) => id.name,
 *     operations: { createInstance, getInstance, deleteInstance, listInstances },
 *     checker: checker(rt),
 *   });
 * }
 * ```
 */
export function bindOperations<R, Id>(
  rt: R,
  parts: ImplementationParts<R, Id>,
): ProviderImplementation<Id> {
  const { ids, operations: ops, checker } = parts;
  const lockKey = parts.lockKey.bind(parts);
  const close = parts.close?.bind(parts);
  const updateAuth = ops.updateInstanceAuth?.bind(ops);
  return Object.freeze({
    ids,
    lockKey,
    create: (req: CheckedCreateRequest, ctx: OperationContext) => ops.createInstance(rt, req, ctx),
    get: (id: Id, ctx: OperationContext) => ops.getInstance(rt, id, ctx),
    delete: (id: Id, ctx: DeleteContext) => ops.deleteInstance(rt, id, ctx),
    list: (installation: string, ctx: OperationContext) => ops.listInstances(rt, installation, ctx),
    ...(updateAuth === undefined
      ? {}
      : {
          updateAuth: (id: Id, auth: ProxyAuth, ctx: OperationContext) =>
            updateAuth(rt, id, auth, ctx),
        }),
    ...(checker === undefined ? {} : { checker }),
    ...(close === undefined ? {} : { close }),
  });
}
