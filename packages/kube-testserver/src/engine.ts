import { randomUUID } from 'node:crypto';
import { CRD_FINALIZER, CRD_GROUP } from './crd.js';
import { nowTime } from './duration.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  fieldForbidden,
  fieldInvalid,
  forbidden,
  invalid,
  notFound,
  StatusError,
} from './errors.js';
import { apply, recordUpdate, type Scope } from './fieldmanager.js';
import { clone, deepEqual, isObject, type JsonObject, meta, str, strings } from './json.js';
import { admitPod, quotaStatus } from './quota.js';
import type { Registry } from './registry.js';
import {
  groupVersion,
  type ResourceType,
  resourceKey,
  type WriteContext,
} from './resource-type.js';
import { objectKey, ownerUids, type Store } from './store.js';

/** Options every write carries (query parameters of the request). */
export interface WriteOptions {
  readonly fieldManager: string;
  readonly dryRun: boolean;
  readonly fieldValidation: 'Strict' | 'Warn' | 'Ignore';
  /** Warnings collected for the `Warning` response header. */
  readonly warnings: string[];
  /** The verb, for the error a strict decoding failure becomes. */
  readonly verb: 'create' | 'update' | 'patch';
}

/** `metav1.DeleteOptions`, from the body or the query. */
export interface DeleteOptions {
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  readonly dryRun: boolean;
  /** Seconds a graceful deletion (of a scheduled pod) may take; 0 deletes now. */
  readonly gracePeriodSeconds?: number;
}

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const NS_KEY = '/namespaces';
const POD_KEY = '/pods';
const QUOTA_KEY = '/resourcequotas';
const CRD_KEY = `${CRD_GROUP}/customresourcedefinitions`;
const SYSTEM_META = [
  'uid',
  'creationTimestamp',
  'generation',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

function gr(t: ResourceType) {
  return { group: t.group, resource: t.resource };
}

function withoutVolatile(o: JsonObject): JsonObject {
  const m = isObject(o.metadata) ? { ...o.metadata } : {};
  delete m.resourceVersion;
  if (Array.isArray(m.managedFields))
    m.managedFields = m.managedFields.map((e) => (isObject(e) ? { ...e, time: '' } : e));
  return { ...o, metadata: m };
}

function nonMetadata(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'metadata') out[k] = v;
  return out;
}

/**
 * The API machinery semantics over the store: create, update, patch, apply
 * and delete as the real server's generic registry does them (uids,
 * resourceVersions, generation, finalizers, managedFields), and the
 * controllers a cluster runs for them (namespace and CRD cleanup, garbage
 * collection of dependents).
 */
export class Engine {
  #pending = false;
  #idle: (() => void)[] = [];
  readonly #orphanedOwners: string[] = [];
  /** Objects with a deletionTimestamp, waiting on finalizers: `resource|key`. */
  readonly #terminating = new Map<string, { resource: string; key: string }>();

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
  ) {
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

  get(t: ResourceType, namespace: string, name: string): JsonObject {
    const o = this.store.get(resourceKey(t), objectKey(t.namespaced ? namespace : '', name));
    if (o === undefined) throw notFound(gr(t), name);
    return o;
  }

  #ctx(opts: WriteOptions): WriteContext {
    return { now: new Date(), fieldValidation: opts.fieldValidation, warnings: opts.warnings };
  }

  #decode(t: ResourceType, obj: JsonObject, opts: WriteOptions) {
    const unknown = t.decode?.(obj, this.#ctx(opts)) ?? [];
    if (unknown.length === 0 || opts.fieldValidation === 'Ignore') return;
    const errs = unknown.map((f) => `unknown field "${f}"`);
    if (opts.fieldValidation === 'Warn') {
      opts.warnings.push(...errs);
      return;
    }
    const message = `strict decoding error: ${errs.join(', ')}`;
    if (opts.verb === 'patch')
      throw new StatusError({
        message: ` "" is invalid: patch: Invalid value: "${JSON.stringify(obj).replace(/"/g, '\\"')}": ${message}`,
        reason: 'Invalid',
        details: { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] },
        code: 422,
      });
    throw badRequest(
      `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${message}`,
    );
  }

  #namespaceCheck(t: ResourceType, namespace: string, name: string, verb: string) {
    if (!t.namespaced) return;
    const ns = this.store.get(NS_KEY, namespace);
    if (ns === undefined) throw notFound({ group: '', resource: 'namespaces' }, namespace);
    if (verb === 'create' && isObject(ns.metadata) && ns.metadata.deletionTimestamp !== undefined)
      throw forbidden(
        gr(t),
        name,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
  }

  #invalid(t: ResourceType, name: string, errs: FieldError[]): StatusError {
    return invalid(t.group, t.kind, name, errs);
  }

  /** POST: a new object, or 409 AlreadyExists. `fromApply` keeps the managedFields apply computed. */
  create(
    t: ResourceType,
    namespace: string,
    body: JsonObject,
    opts: WriteOptions,
    fromApply = false,
  ): JsonObject {
    const obj = clone(body);
    const m = meta(obj);
    if (t.namespaced) {
      const bodyNs = str(m, 'namespace');
      if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== namespace)
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      m.namespace = namespace;
    } else delete m.namespace;
    if (
      (str(m, 'name') ?? '') === '' &&
      typeof m.generateName === 'string' &&
      m.generateName !== ''
    ) {
      let suffix = '';
      for (let i = 0; i < 5; i++)
        suffix += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
      m.name = `${m.generateName}${suffix}`;
    }
    const name = str(m, 'name') ?? '';
    if (!fromApply && (str(m, 'resourceVersion') ?? '') !== '')
      throw badRequest('resourceVersion should not be set on objects to be created');
    delete m.resourceVersion;
    this.#namespaceCheck(t, namespace, name, 'create');
    const ctx = this.#ctx(opts);
    if (!fromApply) this.#decode(t, obj, opts);
    obj.apiVersion = groupVersion(t);
    obj.kind = t.kind;
    for (const k of SYSTEM_META) delete m[k];
    if (!fromApply) delete m.managedFields;
    m.uid = randomUUID();
    m.creationTimestamp = nowTime(ctx.now);
    if (t.generation) m.generation = 1;
    if (t.custom && t.statusSubresource) delete obj.status;
    t.defaults?.(obj, ctx);
    t.prepareCreate?.(obj, ctx);
    const errs = t.validate?.(obj, undefined) ?? [];
    if (errs.length > 0) throw this.#invalid(t, name, errs);
    // Validating admission runs before storage, so a full quota answers 403
    // even where the name is taken.
    const isPod = resourceKey(t) === POD_KEY;
    if (isPod)
      admitPod(
        obj,
        this.store.list(QUOTA_KEY, namespace).map((e) => e.object),
      );
    const key = objectKey(t.namespaced ? namespace : '', name);
    const existing = this.store.get(resourceKey(t), key);
    if (existing !== undefined)
      throw alreadyExists(
        gr(t),
        name,
        isObject(existing.metadata) && existing.metadata.deletionTimestamp !== undefined,
      );
    if (!fromApply)
      recordUpdate(undefined, obj, t, {
        manager: opts.fieldManager,
        apiVersion: groupVersion(t),
        time: nowTime(ctx.now),
        scope: 'main',
      });
    if (opts.dryRun) return obj;
    const stored = clone(this.store.put(resourceKey(t), key, obj));
    // The plugin charges the quotas as it admits (the controller only
    // recalculates later), so the next create already sees this pod.
    if (isPod) this.#updateQuotas(namespace);
    return stored;
  }

  /** The quota controller for one namespace (all when undefined): status.hard and status.used; true when one changed. */
  #updateQuotas(namespace?: string): boolean {
    let changed = false;
    const now = Date.now();
    for (const { key, object } of this.store.list(QUOTA_KEY, namespace)) {
      const ns = str(meta(object), 'namespace') ?? '';
      const pods = this.store.list(POD_KEY, ns).map((e) => e.object);
      const status = quotaStatus(object, pods, now);
      if (JSON.stringify(status) === JSON.stringify(object.status ?? null)) continue;
      const next = clone(object);
      next.status = status;
      this.store.put(QUOTA_KEY, key, next);
      changed = true;
    }
    return changed;
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
    how: { requireVersion: boolean; managed: 'update' | 'keep' },
  ): JsonObject {
    const key = objectKey(t.namespaced ? namespace : '', name);
    const existing = this.store.get(resourceKey(t), key);
    if (existing === undefined) throw notFound(gr(t), name);
    const obj = clone(candidate);
    const m = meta(obj);
    const old = meta(existing);
    const bodyName = str(m, 'name');
    if (bodyName !== undefined && bodyName !== name)
      throw badRequest(
        `the name of the object (${bodyName}) does not match the name on the URL (${name})`,
      );
    if (t.namespaced) {
      const bodyNs = str(m, 'namespace');
      if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== namespace)
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
    }
    const rv = str(m, 'resourceVersion') ?? '';
    if (rv === '') {
      if (how.requireVersion && t.custom)
        throw invalid(t.group, t.resource, name, [
          fieldInvalid('metadata.resourceVersion', 0, 'must be specified for an update'),
        ]);
    } else if (rv !== old.resourceVersion) throw conflict(gr(t), name);
    const ctx = this.#ctx(opts);
    this.#decode(t, obj, opts);
    let next: JsonObject;
    if (scope === 'status') {
      next = clone(existing);
      if (obj.status === undefined) delete next.status;
      else next.status = obj.status;
      if (how.managed === 'keep') {
        if (m.managedFields === undefined) delete meta(next).managedFields;
        else meta(next).managedFields = m.managedFields;
      }
    } else {
      next = obj;
      if (t.statusSubresource) {
        if (existing.status === undefined) delete next.status;
        else next.status = clone(existing.status);
      }
      const nm = meta(next);
      for (const k of SYSTEM_META) {
        if (old[k] === undefined) delete nm[k];
        else nm[k] = old[k]!;
      }
      if (how.managed === 'update') {
        if (old.managedFields === undefined) delete nm.managedFields;
        else nm.managedFields = clone(old.managedFields);
      }
      nm.name = name;
      if (t.namespaced) nm.namespace = namespace;
      else delete nm.namespace;
    }
    next.apiVersion = groupVersion(t);
    next.kind = t.kind;
    const nm = meta(next);
    nm.resourceVersion = old.resourceVersion ?? '';
    t.defaults?.(next, ctx);
    const errs = t.validate?.(next, existing) ?? [];
    if (old.deletionTimestamp !== undefined) {
      const added = strings(nm, 'finalizers').filter(
        (f) => !strings(old, 'finalizers').includes(f),
      );
      if (added.length > 0)
        errs.push(
          fieldForbidden(
            'metadata.finalizers',
            `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
          ),
        );
    }
    if (errs.length > 0) throw this.#invalid(t, name, errs);
    if (t.generation && scope === 'main' && !deepEqual(nonMetadata(next), nonMetadata(existing)))
      nm.generation = (typeof old.generation === 'number' ? old.generation : 0) + 1;
    if (how.managed === 'update')
      recordUpdate(existing, next, t, {
        manager: opts.fieldManager,
        apiVersion: groupVersion(t),
        time: nowTime(ctx.now),
        scope,
      });
    if (deepEqual(withoutVolatile(next), withoutVolatile(existing))) return clone(existing);
    if (opts.dryRun) return next;
    // An update lets a deleted object go once nothing holds it: no
    // finalizer, and no grace period still running (a terminating pod).
    if (
      nm.deletionTimestamp !== undefined &&
      (nm.deletionGracePeriodSeconds ?? 0) === 0 &&
      this.#finalizers(t, next).length === 0
    ) {
      return clone(this.store.remove(resourceKey(t), key) ?? next);
    }
    return clone(this.store.put(resourceKey(t), key, next));
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
    const cfg = clone(applied);
    const m = meta(cfg);
    if (
      typeof cfg.apiVersion !== 'string' ||
      cfg.apiVersion === '' ||
      typeof cfg.kind !== 'string' ||
      cfg.kind === ''
    )
      throw badRequest('invalid object type: /, Kind=');
    const bodyName = str(m, 'name');
    if (bodyName !== undefined && bodyName !== name)
      throw badRequest(
        `the name of the object (${bodyName}) does not match the name on the URL (${name})`,
      );
    m.name = name;
    if (t.namespaced) m.namespace = namespace;
    this.#decode(t, cfg, opts);
    const key = objectKey(t.namespaced ? namespace : '', name);
    const existing = this.store.get(resourceKey(t), key);
    const manager = {
      manager: opts.fieldManager,
      apiVersion: groupVersion(t),
      time: nowTime(),
      scope,
    };
    const noDecode: WriteOptions = { ...opts, fieldValidation: 'Ignore' };
    if (existing === undefined) {
      if (scope === 'status') throw notFound(gr(t), name);
      const rv = str(m, 'resourceVersion');
      if (rv !== undefined && rv !== '') throw notFound(gr(t), name);
      const merged = apply(undefined, cfg, t, manager, force);
      return this.create(t, namespace, merged, noDecode, true);
    }
    const merged = apply(existing, cfg, t, manager, force);
    const mm = meta(merged);
    const rv = str(m, 'resourceVersion');
    mm.resourceVersion =
      rv !== undefined && rv !== '' ? rv : (str(meta(existing), 'resourceVersion') ?? '');
    return this.write(t, namespace, name, merged, noDecode, scope, {
      requireVersion: false,
      managed: 'keep',
    });
  }

  #finalizers(t: ResourceType, o: JsonObject): string[] {
    const f = strings(meta(o), 'finalizers');
    if (resourceKey(t) === NS_KEY && isObject(o.spec)) f.push(...strings(o.spec, 'finalizers'));
    return f;
  }

  /**
   * DELETE: removes the object, or, while it has finalizers, sets
   * `deletionTimestamp` and leaves it for whoever owns the finalizers.
   */
  delete(
    t: ResourceType,
    namespace: string,
    name: string,
    opts: DeleteOptions,
  ): { object: JsonObject; deleted: boolean } {
    const key = objectKey(t.namespaced ? namespace : '', name);
    const existing = this.store.get(resourceKey(t), key);
    if (existing === undefined) throw notFound(gr(t), name);
    const m = meta(existing);
    const pre = opts.preconditions;
    if (pre?.uid !== undefined && pre.uid !== m.uid)
      throw conflict(
        gr(t),
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(m.uid ?? '')}`,
      );
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== m.resourceVersion)
      throw conflict(
        gr(t),
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${String(m.resourceVersion ?? '')}`,
      );
    const graceful = this.#podGrace(t, existing, opts);
    if (graceful !== undefined) return graceful;
    if (m.deletionTimestamp !== undefined) return { object: clone(existing), deleted: false };
    const next = clone(existing);
    const nm = meta(next);
    if (opts.propagationPolicy === 'Orphan' && !opts.dryRun) this.#orphan(m.uid);
    if (opts.propagationPolicy === 'Foreground') {
      const f = strings(nm, 'finalizers');
      if (!f.includes('foregroundDeletion')) nm.finalizers = [...f, 'foregroundDeletion'];
    }
    if (this.#finalizers(t, next).length > 0) {
      nm.deletionTimestamp = nowTime();
      nm.deletionGracePeriodSeconds = 0;
      if (resourceKey(t) === NS_KEY)
        next.status = { ...(isObject(next.status) ? next.status : {}), phase: 'Terminating' };
      if (opts.dryRun) return { object: next, deleted: false };
      return { object: clone(this.store.put(resourceKey(t), key, next)), deleted: false };
    }
    if (opts.dryRun) return { object: next, deleted: true };
    return { object: clone(this.store.remove(resourceKey(t), key) ?? next), deleted: true };
  }

  /**
   * Graceful deletion of a pod, as the pod strategy and the generic
   * registry do it: a pod bound to a node gets `deletionTimestamp` in
   * `gracePeriodSeconds` (its `terminationGracePeriodSeconds`, 30 by
   * default) and stays until its kubelet deletes it again with 0; an
   * unscheduled or finished pod goes at once. A second delete may only
   * shorten the period. Undefined when the ordinary path applies.
   */
  #podGrace(
    t: ResourceType,
    existing: JsonObject,
    opts: DeleteOptions,
  ): { object: JsonObject; deleted: boolean } | undefined {
    if (resourceKey(t) !== POD_KEY) return undefined;
    const spec = isObject(existing.spec) ? existing.spec : {};
    const status = isObject(existing.status) ? existing.status : {};
    const m = meta(existing);
    let grace =
      opts.gracePeriodSeconds ??
      (typeof spec.terminationGracePeriodSeconds === 'number'
        ? spec.terminationGracePeriodSeconds
        : 30);
    if ((str(spec, 'nodeName') ?? '') === '') grace = 0;
    if (status.phase === 'Succeeded' || status.phase === 'Failed') grace = 0;
    if (grace < 0) grace = 1;
    const current =
      typeof m.deletionGracePeriodSeconds === 'number' ? m.deletionGracePeriodSeconds : undefined;
    if (m.deletionTimestamp !== undefined) {
      // Already terminating: only a shorter period changes anything.
      if (current === undefined || grace >= current)
        return { object: clone(existing), deleted: false };
    } else if (grace === 0) return undefined;
    const requested =
      m.deletionTimestamp !== undefined && current !== undefined
        ? Date.parse(String(m.deletionTimestamp)) - current * 1000
        : Date.now();
    const next = clone(existing);
    const nm = meta(next);
    nm.deletionTimestamp = nowTime(new Date(requested + grace * 1000));
    nm.deletionGracePeriodSeconds = grace;
    if (opts.dryRun) return { object: next, deleted: false };
    if (grace === 0 && this.#finalizers(t, next).length === 0) {
      return {
        object: clone(
          this.store.remove(
            resourceKey(t),
            objectKey(str(m, 'namespace') ?? '', str(m, 'name') ?? ''),
          ) ?? next,
        ),
        deleted: true,
      };
    }
    const key = objectKey(str(m, 'namespace') ?? '', str(m, 'name') ?? '');
    return { object: clone(this.store.put(resourceKey(t), key, next)), deleted: false };
  }

  #orphan(uid: unknown) {
    if (typeof uid !== 'string') return;
    for (const d of this.store.dependents(uid)) {
      const o = this.store.get(d.resource, d.key);
      if (o === undefined) continue;
      const next = clone(o);
      const nm = meta(next);
      const refs = Array.isArray(nm.ownerReferences) ? nm.ownerReferences : [];
      const kept = refs.filter((r) => !(isObject(r) && r.uid === uid));
      if (kept.length === 0) delete nm.ownerReferences;
      else nm.ownerReferences = kept;
      this.store.put(d.resource, d.key, next);
    }
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
    let changed = false;
    const types = this.registry.byKey();
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
      this.delete(t, str(m, 'namespace') ?? '', str(m, 'name') ?? '', { dryRun: false });
      changed = true;
    };
    const dropFinalizer = (key: string, o: JsonObject, finalizer: string, spec = false) => {
      const next = clone(o);
      const holder = spec ? (isObject(next.spec) ? next.spec : {}) : meta(next);
      holder.finalizers = strings(holder, 'finalizers').filter((f) => f !== finalizer);
      const t = types.get(key);
      if (t === undefined) return;
      const m = meta(next);
      this.write(t, str(m, 'namespace') ?? '', str(m, 'name') ?? '', next, system, 'main', {
        requireVersion: false,
        managed: 'keep',
      });
      changed = true;
    };
    // The quota controller: usage recalculated as pods come and go.
    if (this.#updateQuotas()) changed = true;
    // Garbage collection of dependents whose owners are gone.
    while (this.#orphanedOwners.length > 0) {
      const uid = this.#orphanedOwners.shift()!;
      for (const d of this.store.dependents(uid)) {
        const o = this.store.get(d.resource, d.key);
        const t = types.get(d.resource);
        if (o === undefined || t === undefined) continue;
        const live = ownerUids(o).filter((u) => this.store.byUid(u) !== undefined);
        if (live.length === 0) del(t, o);
        else {
          const next = clone(o);
          const nm = meta(next);
          nm.ownerReferences = (Array.isArray(nm.ownerReferences) ? nm.ownerReferences : []).filter(
            (r) => isObject(r) && typeof r.uid === 'string' && live.includes(r.uid),
          );
          this.store.put(d.resource, d.key, next);
          changed = true;
        }
      }
    }
    for (const { resource: key, key: objKey } of [...this.#terminating.values()]) {
      {
        const o = this.store.get(key, objKey);
        if (o === undefined) continue;
        const m = meta(o);
        if (m.deletionTimestamp === undefined) continue;
        // Foreground deletion: dependents first, then the owner's finalizer goes.
        if (strings(m, 'finalizers').includes('foregroundDeletion')) {
          const deps = typeof m.uid === 'string' ? this.store.dependents(m.uid) : [];
          for (const d of deps) {
            const dep = this.store.get(d.resource, d.key);
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
            for (const { object: child } of this.store.list(k, ns)) {
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
          const crs = this.store.list(crKey);
          if (crType !== undefined) for (const { object: cr } of crs) del(crType, cr);
          if (crs.length === 0) dropFinalizer(key, o, CRD_FINALIZER);
        }
      }
    }
    return changed;
  }
}
