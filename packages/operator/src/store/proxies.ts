/**
 * The store the reconciler, GC and health monitor work over: Proxy objects
 * with Kubernetes' semantics (UIDs, generations, finalizers, a deletion
 * timestamp, a status subresource), and ProviderHealth objects.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../api/canonical-json.js';
import type {
  ProviderHealth,
  ProxyMetadata,
  ProxyObject,
  ProxySpec,
  ProxyStatus,
} from '../api/proxy.js';

/** `namespace/name`: the key of a Proxy in the store and the queue. */
export function proxyKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Splits a key into namespace and name. */
export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  if (i < 0) throw new TypeError(`not a Proxy key: ${key}`);
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/**
 * Where Proxies and ProviderHealth live. Reads come from a cache and are
 * synchronous (the reconciler is level-based); writes are asynchronous.
 */
export interface ProxyStore {
  /** One Proxy, or undefined when it does not exist (any more). */
  get(key: string): ProxyObject | undefined;
  /** Every Proxy. */
  list(): ProxyObject[];
  /** Replaces a Proxy's status. A Proxy that is gone is ignored. */
  updateStatus(key: string, status: ProxyStatus): Promise<void>;
  /** Adds a finalizer (durably, before the reconciler makes anything). */
  addFinalizer(key: string, finalizer: string): Promise<void>;
  /** Removes a finalizer; a Proxy being deleted with none left is gone. */
  removeFinalizer(key: string, finalizer: string): Promise<void>;
  /** Subscribes to changes; the listener gets the key. Returns the unsubscribe function. */
  watch(listener: (key: string) => void): () => void;
  /** Writes a ProviderHealth. */
  writeHealth(health: ProviderHealth): Promise<void>;
  /** Removes the ProviderHealth of a provider that is no longer configured. */
  deleteHealth(name: string): Promise<void>;
  /** Every ProviderHealth. */
  listHealth(): ProviderHealth[];
  /**
   * Records an Event on a Proxy (create, replace, delete, latch). Stores
   * without events leave it out; it never throws.
   */
  recordEvent?(key: string, type: EventType, reason: string, message: string): void;
  /** Objects the store could not take (a manifest or spec that fails validation), each with its problem. */
  problems?(): readonly string[];
  /** UIDs of Proxies the store holds but cannot reconcile: GC never deletes their instances. */
  protectedUids?(): ReadonlySet<string>;
}

/** What {@link hookStore} adds to a store's writes. */
export interface StoreHooks {
  /** After a status write went through: the key, the status before and the one written. */
  readonly afterStatus?: (key: string, before: ProxyStatus | undefined, after: ProxyStatus) => void;
  /** Instead of the store's own Event recording (call `record` to keep it). */
  readonly recordEvent?: (
    key: string,
    type: EventType,
    reason: string,
    message: string,
    record: (key: string, type: EventType, reason: string, message: string) => void,
  ) => void;
}

/**
 * The same store with hooks on its writes: what the status page keeps of
 * Events, what the pool controller learns of its Proxies' status. Every
 * other call goes to the store as it is.
 */
export function hookStore(store: ProxyStore, hooks: StoreHooks): ProxyStore {
  const { problems, protectedUids } = store;
  const record = (key: string, type: EventType, reason: string, message: string) =>
    store.recordEvent?.(key, type, reason, message);
  const onEvent = hooks.recordEvent;
  const afterStatus = hooks.afterStatus;
  return {
    get: (key) => store.get(key),
    list: () => store.list(),
    updateStatus:
      afterStatus === undefined
        ? (key, status) => store.updateStatus(key, status)
        : async (key, status) => {
            const before = store.get(key)?.status;
            await store.updateStatus(key, status);
            afterStatus(key, before, status);
          },
    addFinalizer: (key, f) => store.addFinalizer(key, f),
    removeFinalizer: (key, f) => store.removeFinalizer(key, f),
    watch: (listener) => store.watch(listener),
    writeHealth: (h) => store.writeHealth(h),
    deleteHealth: (name) => store.deleteHealth(name),
    listHealth: () => store.listHealth(),
    recordEvent:
      onEvent === undefined
        ? record
        : (key, type, reason, message) => onEvent(key, type, reason, message, record),
    ...(problems === undefined ? {} : { problems: () => problems.call(store) }),
    ...(protectedUids === undefined ? {} : { protectedUids: () => protectedUids.call(store) }),
  };
}

/** The type of an Event, as Kubernetes has it. */
export type EventType = 'Normal' | 'Warning';

/**
 * A store in memory, with Kubernetes' semantics: `apply` creates or updates a
 * Proxy (a new UID once, the generation bumped on a spec change), `delete`
 * sets the deletion timestamp and removes the object once it has no
 * finalizers. For tests, benchmarks and embedding.
 */
export class MemoryStore implements ProxyStore {
  readonly #proxies = new Map<string, ProxyObject>();
  readonly #health = new Map<string, ProviderHealth>();
  readonly #listeners = new Set<(key: string) => void>();
  readonly #now: () => Date;
  /** The Events recorded, oldest first. */
  readonly events: Array<{ key: string; type: EventType; reason: string; message: string }> = [];

  constructor(opts: { now?: () => Date } = {}) {
    this.#now = opts.now ?? (() => new Date());
  }

  /**
   * Creates or updates the Proxy `namespace/name` with `spec` (already
   * validated); `meta` sets its labels, annotations and owners.
   */
  apply(
    namespace: string,
    name: string,
    spec: ProxySpec,
    uid?: string,
    meta: Pick<ProxyMetadata, 'labels' | 'annotations' | 'ownerReferences'> = {},
  ): ProxyObject {
    const key = proxyKey(namespace, name);
    const old = this.#proxies.get(key);
    if (old !== undefined && canonicalJson(old.spec) === canonicalJson(spec)) return old;
    const next: ProxyObject =
      old === undefined
        ? {
            metadata: {
              namespace,
              name,
              uid: uid ?? randomUUID(),
              generation: 1,
              creationTimestamp: this.#now().toISOString(),
              finalizers: [],
              ...meta,
            },
            spec,
            status: {},
          }
        : { ...old, metadata: { ...old.metadata, generation: old.metadata.generation + 1 }, spec };
    this.#proxies.set(key, next);
    this.#emit(key);
    return next;
  }

  /** Asks for deletion: the Proxy stays, marked, until its finalizers are removed. */
  delete(key: string): void {
    const old = this.#proxies.get(key);
    if (old === undefined) return;
    if (old.metadata.finalizers.length === 0) this.#proxies.delete(key);
    else if (old.metadata.deletionTimestamp === undefined) {
      this.#proxies.set(key, {
        ...old,
        metadata: { ...old.metadata, deletionTimestamp: this.#now().toISOString() },
      });
    }
    this.#emit(key);
  }

  /** {@inheritDoc ProxyStore.get} */
  get(key: string): ProxyObject | undefined {
    return this.#proxies.get(key);
  }

  /** {@inheritDoc ProxyStore.list} */
  list(): ProxyObject[] {
    return [...this.#proxies.values()];
  }

  /** {@inheritDoc ProxyStore.updateStatus} */
  async updateStatus(key: string, status: ProxyStatus): Promise<void> {
    const old = this.#proxies.get(key);
    if (old === undefined) return;
    this.#proxies.set(key, { ...old, status });
  }

  /** {@inheritDoc ProxyStore.addFinalizer} */
  async addFinalizer(key: string, finalizer: string): Promise<void> {
    const old = this.#proxies.get(key);
    if (old === undefined || old.metadata.finalizers.includes(finalizer)) return;
    if (old.metadata.deletionTimestamp !== undefined) return;
    this.#proxies.set(key, {
      ...old,
      metadata: { ...old.metadata, finalizers: [...old.metadata.finalizers, finalizer] },
    });
  }

  /** {@inheritDoc ProxyStore.removeFinalizer} */
  async removeFinalizer(key: string, finalizer: string): Promise<void> {
    const old = this.#proxies.get(key);
    if (old === undefined) return;
    const finalizers = old.metadata.finalizers.filter((f) => f !== finalizer);
    if (finalizers.length === 0 && old.metadata.deletionTimestamp !== undefined) {
      this.#proxies.delete(key);
    } else {
      this.#proxies.set(key, { ...old, metadata: { ...old.metadata, finalizers } });
    }
  }

  /** {@inheritDoc ProxyStore.watch} */
  watch(listener: (key: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** {@inheritDoc ProxyStore.writeHealth} */
  async writeHealth(health: ProviderHealth): Promise<void> {
    this.#health.set(health.name, health);
  }

  /** {@inheritDoc ProxyStore.deleteHealth} */
  async deleteHealth(name: string): Promise<void> {
    this.#health.delete(name);
  }

  /** {@inheritDoc ProxyStore.listHealth} */
  listHealth(): ProviderHealth[] {
    return [...this.#health.values()];
  }

  /** {@inheritDoc ProxyStore.recordEvent} */
  recordEvent(key: string, type: EventType, reason: string, message: string): void {
    this.events.push({ key, type, reason, message });
  }

  #emit(key: string): void {
    for (const l of this.#listeners) l(key);
  }
}
