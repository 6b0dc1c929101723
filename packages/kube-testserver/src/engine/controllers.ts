/**
 * The controllers a cluster runs behind the API, driven by the store's
 * events: garbage collection of dependents whose owners are gone,
 * foreground deletion, the namespace and CRD finalizers, and the quota
 * controller. Each change schedules passes until one changes nothing.
 *
 * @module
 */
import { CRD_FINALIZER } from '../crd.js';
import { clone, isObject, type JsonObject, meta, str, strings } from '../json.js';
import type { Registry } from '../registry.js';
import type { ResourceType } from '../resource-type.js';
import { objectKey, ownerUids, type Store } from '../store.js';
import { deleteObject } from './delete.js';
import { CRD_KEY, NS_KEY } from './objects.js';
import type { WriteOptions } from './options.js';
import { updateQuotas } from './quota-controller.js';
import { updateObject } from './update.js';

/** The controller loop over one store. */
export class Controllers {
  readonly #store: Store;
  readonly #registry: Registry;
  #pending = false;
  #idle: (() => void)[] = [];
  readonly #orphanedOwners: string[] = [];
  /** Objects with a deletionTimestamp, waiting on finalizers: `resource|key`. */
  readonly #terminating = new Map<string, { resource: string; key: string }>();

  constructor(store: Store, registry: Registry) {
    this.#store = store;
    this.#registry = registry;
    store.subscribe((e) => {
      if (e.resource === CRD_KEY) registry.refresh();
      const ref = `${e.resource}|${str(meta(e.object), 'namespace') ?? ''}/${str(meta(e.object), 'name') ?? ''}`;
      if (e.type === 'DELETED') {
        this.#terminating.delete(ref);
        const uid = str(meta(e.object), 'uid');
        if (uid !== undefined) this.#orphanedOwners.push(uid);
      } else if (meta(e.object).deletionTimestamp !== undefined) {
        const m = meta(e.object);
        const ns = str(m, 'namespace');
        this.#terminating.set(ref, {
          resource: e.resource,
          key: objectKey(ns, str(m, 'name') ?? ''),
        });
      } else if (
        e.type === 'MODIFIED' &&
        e.previous !== undefined &&
        meta(e.previous).deletionTimestamp !== undefined
      ) {
        this.#terminating.delete(ref);
      }
      this.#schedule();
    });
  }

  /** Resolves when the controllers have nothing left to do. */
  settled(): Promise<void> {
    if (!this.#pending) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #schedule() {
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => this.#reconcile());
  }

  /** The controllers: one pass, repeated while it changes something. */
  #reconcile() {
    try {
      for (let i = 0; i < 1000 && this.#pass(); i++);
    } finally {
      this.#pending = false;
      const idle = this.#idle.splice(0);
      for (const f of idle) f();
    }
  }

  #pass(): boolean {
    const store = this.#store;
    let changed = false;
    const types = this.#registry.byKey();
    const system: WriteOptions = {
      fieldManager: '',
      dryRun: false,
      fieldValidation: 'Ignore',
      warnings: [],
      verb: 'update',
    };
    const del = (t: ResourceType, o: JsonObject) => {
      const m = meta(o);
      if (m.deletionTimestamp !== undefined) return;
      deleteObject(store, t, str(m, 'namespace') ?? '', str(m, 'name') ?? '', { dryRun: false });
      changed = true;
    };
    const dropFinalizer = (key: string, o: JsonObject, finalizer: string, spec = false) => {
      const next = clone(o);
      const holder = spec ? (isObject(next.spec) ? next.spec : {}) : meta(next);
      holder.finalizers = strings(holder, 'finalizers').filter((f) => f !== finalizer);
      const t = types.get(key);
      if (t === undefined) return;
      const m = meta(next);
      updateObject(
        store,
        t,
        str(m, 'namespace') ?? '',
        str(m, 'name') ?? '',
        next,
        system,
        'main',
        {
          requireVersion: false,
          managed: 'keep',
        },
      );
      changed = true;
    };
    // The quota controller: usage recalculated as pods come and go.
    if (updateQuotas(store)) changed = true;
    // Garbage collection of dependents whose owners are gone.
    while (this.#orphanedOwners.length > 0) {
      const uid = this.#orphanedOwners.shift()!;
      for (const d of store.dependents(uid)) {
        const o = store.get(d.resource, d.key);
        const t = types.get(d.resource);
        if (o === undefined || t === undefined) continue;
        const live = ownerUids(o).filter((u) => store.byUid(u) !== undefined);
        if (live.length === 0) del(t, o);
        else {
          const next = clone(o);
          const nm = meta(next);
          nm.ownerReferences = (Array.isArray(nm.ownerReferences) ? nm.ownerReferences : []).filter(
            (r) => isObject(r) && typeof r.uid === 'string' && live.includes(r.uid),
          );
          store.put(d.resource, d.key, next);
          changed = true;
        }
      }
    }
    for (const { resource: key, key: objKey } of [...this.#terminating.values()]) {
      const o = store.get(key, objKey);
      if (o === undefined) continue;
      const m = meta(o);
      if (m.deletionTimestamp === undefined) continue;
      // Foreground deletion: dependents first, then the owner's finalizer goes.
      if (strings(m, 'finalizers').includes('foregroundDeletion')) {
        const deps = typeof m.uid === 'string' ? store.dependents(m.uid) : [];
        for (const d of deps) {
          const dep = store.get(d.resource, d.key);
          const dt = types.get(d.resource);
          if (dep !== undefined && dt !== undefined) del(dt, dep);
        }
        if (deps.length === 0) dropFinalizer(key, o, 'foregroundDeletion');
      }
      // Namespace controller: empty the namespace, then release it.
      if (
        key === NS_KEY &&
        isObject(o.spec) &&
        strings(o.spec, 'finalizers').includes('kubernetes')
      ) {
        const ns = str(m, 'name') ?? '';
        let remaining = 0;
        for (const [k, ct] of types) {
          if (!ct.namespaced) continue;
          for (const { object: child } of store.list(k, ns)) {
            remaining++;
            del(ct, child);
          }
        }
        if (remaining === 0) dropFinalizer(key, o, 'kubernetes', true);
      }
      // CRD controller: delete every custom resource, then release the CRD.
      if (key === CRD_KEY && strings(m, 'finalizers').includes(CRD_FINALIZER)) {
        const spec = isObject(o.spec) ? o.spec : {};
        const names = isObject(spec.names) ? spec.names : {};
        const crKey = `${String(spec.group ?? '')}/${String(names.plural ?? '')}`;
        const crType = types.get(crKey);
        const crs = store.list(crKey);
        if (crType !== undefined) for (const { object: cr } of crs) del(crType, cr);
        if (crs.length === 0) dropFinalizer(key, o, CRD_FINALIZER);
      }
    }
    return changed;
  }
}
