/**
 * The engine: the API machinery over the store, as one façade the
 * handlers and the server call. Each path lives in its own file (create,
 * update, apply, delete), and the controllers run behind them.
 *
 * @module
 */
import type { Scope } from '../fieldmanager.js';
import type { JsonObject } from '../json.js';
import type { Registry } from '../registry.js';
import type { ResourceType } from '../resource-type.js';
import type { Store } from '../store.js';
import { applyObject } from './apply.js';
import { Controllers } from './controllers.js';
import { createObject } from './create.js';
import { type DeleteResult, deleteObject } from './delete.js';
import { findStored } from './objects.js';
import type { DeleteOptions, WriteOptions } from './options.js';
import { updateObject, type WriteHow } from './update.js';

/**
 * The API machinery semantics over the store: create, update, patch, apply
 * and delete as the real server's generic registry does them (uids,
 * resourceVersions, generation, finalizers, managedFields), and the
 * controllers a cluster runs for them (namespace and CRD cleanup, garbage
 * collection of dependents).
 */
export class Engine {
  readonly #store: Store;
  readonly #controllers: Controllers;

  constructor(store: Store, registry: Registry) {
    this.#store = store;
    this.#controllers = new Controllers(store, registry);
  }

  /** Resolves when the controllers have nothing left to do. */
  settled(): Promise<void> {
    return this.#controllers.settled();
  }

  /** The stored object, or 404 NotFound. */
  get(t: ResourceType, namespace: string, name: string): JsonObject {
    return findStored(this.#store, t, namespace, name).existing;
  }

  /** POST: a new object, or 409 AlreadyExists. `fromApply` keeps the managedFields apply computed. */
  create(
    t: ResourceType,
    namespace: string,
    body: JsonObject,
    opts: WriteOptions,
    fromApply = false,
  ): JsonObject {
    return createObject(this.#store, t, namespace, body, opts, fromApply);
  }

  /**
   * Writes `candidate` over the stored object: the update pipeline of PUT,
   * PATCH and apply. `requireVersion` is PUT's rule for custom resources
   * (no unconditional update).
   */
  write(
    t: ResourceType,
    namespace: string,
    name: string,
    candidate: JsonObject,
    opts: WriteOptions,
    scope: Scope,
    how: WriteHow,
  ): JsonObject {
    return updateObject(this.#store, t, namespace, name, candidate, opts, scope, how);
  }

  /** Server-side apply (PATCH with `application/apply-patch+yaml`). */
  apply(
    t: ResourceType,
    namespace: string,
    name: string,
    applied: JsonObject,
    opts: WriteOptions,
    scope: Scope,
    force: boolean,
  ): JsonObject {
    return applyObject(this.#store, t, namespace, name, applied, opts, scope, force);
  }

  /**
   * DELETE: removes the object, or, while it has finalizers, sets
   * `deletionTimestamp` and leaves it for whoever owns the finalizers.
   */
  delete(t: ResourceType, namespace: string, name: string, opts: DeleteOptions): DeleteResult {
    return deleteObject(this.#store, t, namespace, name, opts);
  }
}
