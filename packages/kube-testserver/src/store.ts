/**
 * The server's storage: the objects of every resource under one global
 * resourceVersion counter, the change each commit sends to listeners, and
 * the bounded history of changes watches resume from.
 *
 * @module
 */
import { expired } from './errors.js';
import { isObject, type JsonObject } from './json.js';

/** A change to one object, as a watch sends it. */
export interface StoreEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The storage key of the resource (`group/resource`). */
  readonly resource: string;
  readonly object: JsonObject;
  /** The object before the change (MODIFIED, DELETED). */
  readonly previous: JsonObject | undefined;
  readonly resourceVersion: number;
}

/** Receives every committed change. */
export type StoreListener = (event: StoreEvent) => void;

/** `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`;
}

function metaOf(o: JsonObject): JsonObject {
  return isObject(o.metadata) ? o.metadata : {};
}

/**
 * The objects of every resource, one global resourceVersion counter (as
 * etcd's revision), and a bounded history of changes from which watches
 * resume. Stored objects are never mutated: every write stores a new one.
 */
export class Store {
  #rv = 0;
  readonly #collections = new Map<string, Map<string, JsonObject>>();
  readonly #history: StoreEvent[] = [];
  /** Watches may resume from any resourceVersion at or after this one. */
  #windowStart = 0;
  readonly #listeners = new Set<StoreListener>();
  readonly #capacity: number;
  /** uid → where the object lives, for owner references. */
  readonly #byUid = new Map<string, { resource: string; key: string }>();
  /** owner uid → dependents (resource, key). */
  readonly #dependents = new Map<string, Map<string, { resource: string; key: string }>>();

  constructor(opts: { historyCapacity: number }) {
    this.#capacity = opts.historyCapacity;
  }

  /** The latest committed resourceVersion. */
  get resourceVersion(): number {
    return this.#rv;
  }

  /** The oldest resourceVersion a watch may still resume from. */
  get windowStart(): number {
    return this.#windowStart;
  }

  /**
   * Forgets the history, as a compaction at the latest revision does: a
   * watch resuming from any earlier version gets 410 Gone, so its client
   * must list again; one from the latest version (what a list made now
   * answers) is served, as kube-apiserver serves it.
   */
  expireHistory(): void {
    this.#history.length = 0;
    this.#windowStart = this.#rv;
  }

  subscribe(listener: StoreListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get(resource: string, key: string): JsonObject | undefined {
    return this.#collections.get(resource)?.get(key);
  }

  /** Where the object with this uid lives, if it exists. */
  byUid(uid: string): { resource: string; key: string } | undefined {
    return this.#byUid.get(uid);
  }

  /** The objects whose ownerReferences name this uid. */
  dependents(uid: string): { resource: string; key: string }[] {
    return [...(this.#dependents.get(uid)?.values() ?? [])];
  }

  /** The objects of a resource, optionally of one namespace, sorted by key as etcd lists them. */
  list(resource: string, namespace?: string): { key: string; object: JsonObject }[] {
    const c = this.#collections.get(resource);
    if (c === undefined) return [];
    const out: { key: string; object: JsonObject }[] = [];
    const prefix = namespace === undefined || namespace === '' ? undefined : `${namespace}/`;
    for (const [key, object] of c)
      if (prefix === undefined || key.startsWith(prefix)) out.push({ key, object });
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  /** Every resource key that holds objects. */
  resources(): string[] {
    return [...this.#collections.keys()];
  }

  /** Stores `object` (its metadata.resourceVersion is set here) and records the event. */
  put(resource: string, key: string, object: JsonObject): JsonObject {
    const rv = ++this.#rv;
    metaOf(object).resourceVersion = String(rv);
    let c = this.#collections.get(resource);
    if (c === undefined) {
      c = new Map();
      this.#collections.set(resource, c);
    }
    const previous = c.get(key);
    c.set(key, object);
    this.#index(resource, key, previous, object);
    this.#record({
      type: previous === undefined ? 'ADDED' : 'MODIFIED',
      resource,
      object,
      previous,
      resourceVersion: rv,
    });
    return object;
  }

  /** Removes an object; the DELETED event carries the object at a new resourceVersion. */
  remove(resource: string, key: string): JsonObject | undefined {
    const c = this.#collections.get(resource);
    const previous = c?.get(key);
    if (c === undefined || previous === undefined) return undefined;
    c.delete(key);
    const rv = ++this.#rv;
    const object = { ...previous, metadata: { ...metaOf(previous), resourceVersion: String(rv) } };
    this.#index(resource, key, previous, undefined);
    this.#record({ type: 'DELETED', resource, object, previous, resourceVersion: rv });
    return object;
  }

  /** Drops every object of a resource without events (a CRD's objects after it is gone). */
  dropResource(resource: string): void {
    const c = this.#collections.get(resource);
    if (c === undefined) return;
    for (const [key, o] of c) this.#index(resource, key, o, undefined);
    this.#collections.delete(resource);
  }

  /**
   * The events of one resource after `resourceVersion`, or a 410 Expired
   * error when that version is older than the retained window.
   */
  since(resource: string, resourceVersion: number): StoreEvent[] {
    if (resourceVersion < this.#windowStart)
      throw expired(`too old resource version: ${resourceVersion} (${this.#windowStart})`);
    const out: StoreEvent[] = [];
    for (const e of this.#history)
      if (e.resourceVersion > resourceVersion && e.resource === resource) out.push(e);
    return out;
  }

  #record(event: StoreEvent) {
    this.#history.push(event);
    while (this.#history.length > this.#capacity) {
      const dropped = this.#history.shift();
      if (dropped !== undefined) this.#windowStart = dropped.resourceVersion;
    }
    for (const l of [...this.#listeners]) l(event);
  }

  #index(
    resource: string,
    key: string,
    before: JsonObject | undefined,
    after: JsonObject | undefined,
  ) {
    const ref = `${resource}|${key}`;
    if (before !== undefined) {
      const uid = metaOf(before).uid;
      if (typeof uid === 'string') this.#byUid.delete(uid);
      for (const owner of ownerUids(before)) {
        const d = this.#dependents.get(owner);
        d?.delete(ref);
        if (d?.size === 0) this.#dependents.delete(owner);
      }
    }
    if (after !== undefined) {
      const uid = metaOf(after).uid;
      if (typeof uid === 'string') this.#byUid.set(uid, { resource, key });
      for (const owner of ownerUids(after)) {
        let d = this.#dependents.get(owner);
        if (d === undefined) {
          d = new Map();
          this.#dependents.set(owner, d);
        }
        d.set(ref, { resource, key });
      }
    }
  }
}

/** The uids an object's ownerReferences name. */
export function ownerUids(o: JsonObject): string[] {
  const refs = metaOf(o).ownerReferences;
  if (!Array.isArray(refs)) return [];
  const out: string[] = [];
  for (const r of refs) if (isObject(r) && typeof r.uid === 'string') out.push(r.uid);
  return out;
}
