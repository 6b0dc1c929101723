/**
 * Managed fields, as the real server's field manager keeps them: the field
 * sets an object sets, FieldsV1, the entries an update records, and
 * server-side apply with its conflicts.
 *
 * @module
 */
import { type StatusCause, StatusError } from './errors.js';
import { clone, deepEqual, isObject, type JsonObject, type JsonValue } from './json.js';

/** One element of a field path, as FieldsV1 spells it: `f:spec`, `k:{"name":"a"}`, `v:"x"`. */
type PathElement = string;
type FieldPath = readonly PathElement[];

/** A set of field paths, keyed by their JSON form. */
type FieldSet = Map<string, FieldPath>;

const IGNORED_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
  'generateName',
]);

/** What part of an object a request may write: the main resource or its status. */
export type Scope = 'main' | 'status';

interface Shape {
  readonly listMapKeys: Readonly<Record<string, readonly string[]>>;
  readonly statusSubresource: boolean;
}

function add(set: FieldSet, path: FieldPath) {
  set.set(JSON.stringify(path), path);
}

function keyOf(item: JsonObject, keys: readonly string[]): string {
  const k: JsonObject = {};
  for (const key of keys) if (key in item) k[key] = item[key]!;
  return `k:${JSON.stringify(k)}`;
}

/** Whether a top-level field belongs to the part of the object a scope writes. */
function inScope(key: string, scope: Scope, shape: Shape): boolean {
  if (key === 'apiVersion' || key === 'kind') return false;
  if (!shape.statusSubresource) return true;
  return scope === 'status' ? key === 'status' : key !== 'status';
}

/** The field paths an object sets (leaves, and list items of keyed lists). */
export function fieldsOf(obj: JsonObject, shape: Shape, scope: Scope): FieldSet {
  const set: FieldSet = new Map();
  for (const [k, v] of Object.entries(obj)) {
    if (!inScope(k, scope, shape)) continue;
    if (k === 'metadata') {
      if (!isObject(v)) continue;
      for (const [mk, mv] of Object.entries(v)) {
        if (IGNORED_META.has(mk)) continue;
        walk(mv, ['f:metadata', `f:${mk}`], `metadata.${mk}`, shape, set);
      }
      continue;
    }
    walk(v, [`f:${k}`], k, shape, set);
  }
  return set;
}

function walk(v: JsonValue, path: PathElement[], dotted: string, shape: Shape, set: FieldSet) {
  if (isObject(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v))
      walk(x, [...path, `f:${k}`], `${dotted}.${k}`, shape, set);
    return;
  }
  const keys = shape.listMapKeys[dotted];
  if (Array.isArray(v) && keys !== undefined && v.length > 0) {
    for (const item of v) {
      if (!isObject(item)) continue;
      const itemPath = [...path, keyOf(item, keys)];
      add(set, itemPath);
      for (const [k, x] of Object.entries(item))
        walk(x, [...itemPath, `f:${k}`], `${dotted}.${k}`, shape, set);
    }
    return;
  }
  add(set, path);
}

/** The value at a field path, or undefined. */
function valueAt(obj: JsonValue | undefined, path: FieldPath): JsonValue | undefined {
  let cur: JsonValue | undefined = obj;
  for (const el of path) {
    if (el.startsWith('f:')) {
      cur = isObject(cur) ? cur[el.slice(2)] : undefined;
    } else if (el.startsWith('k:')) {
      const k = JSON.parse(el.slice(2)) as JsonObject;
      cur = Array.isArray(cur)
        ? cur.find((x) => isObject(x) && Object.entries(k).every(([a, b]) => deepEqual(x[a], b)))
        : undefined;
    } else return undefined;
  }
  return cur;
}

/** Removes the value at a field path (a map key or a keyed list item). */
function removeAt(obj: JsonObject, path: FieldPath) {
  let cur: JsonValue | undefined = obj;
  for (const el of path.slice(0, -1)) cur = valueAt(cur, [el]);
  const last = path.at(-1);
  if (last === undefined) return;
  if (last.startsWith('f:') && isObject(cur)) delete cur[last.slice(2)];
  else if (last.startsWith('k:') && Array.isArray(cur)) {
    const item = valueAt(cur, [last]);
    const i = cur.indexOf(item as JsonValue);
    if (i >= 0) cur.splice(i, 1);
  }
}

/** `.spec.containers[name="a"].image`, as structured-merge-diff prints a path. */
export function printPath(path: FieldPath): string {
  return path
    .map((el) => {
      if (el.startsWith('f:')) return `.${el.slice(2)}`;
      if (el.startsWith('k:')) {
        const k = JSON.parse(el.slice(2)) as JsonObject;
        return `[${Object.entries(k)
          .map(([a, b]) => `${a}=${JSON.stringify(b)}`)
          .join(',')}]`;
      }
      return `[=${el.slice(2)}]`;
    })
    .join('');
}

/** FieldsV1 JSON for a set of paths. */
export function toFieldsV1(set: FieldSet): JsonObject {
  const root: JsonObject = {};
  const prefixes = new Set<string>();
  for (const path of set.values())
    for (let i = 1; i < path.length; i++) prefixes.add(JSON.stringify(path.slice(0, i)));
  for (const [key, path] of set) {
    let node = root;
    for (const el of path) {
      let next = node[el];
      if (!isObject(next)) {
        next = {};
        node[el] = next;
      }
      node = next;
    }
    if (prefixes.has(key)) node['.'] = {};
  }
  return root;
}

/** The paths of FieldsV1 JSON. */
export function fromFieldsV1(
  fields: JsonValue | undefined,
  prefix: PathElement[] = [],
  set: FieldSet = new Map(),
): FieldSet {
  if (!isObject(fields)) return set;
  for (const [k, v] of Object.entries(fields)) {
    if (k === '.') {
      add(set, prefix);
      continue;
    }
    const path = [...prefix, k];
    if (!isObject(v) || Object.keys(v).length === 0) add(set, path);
    else fromFieldsV1(v, path, set);
  }
  return set;
}

/** One `metadata.managedFields` entry. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string;
  fields: FieldSet;
}

function readEntries(obj: JsonObject | undefined): ManagedFieldsEntry[] {
  const mf = isObject(obj?.metadata) ? obj.metadata.managedFields : undefined;
  if (!Array.isArray(mf)) return [];
  const out: ManagedFieldsEntry[] = [];
  for (const e of mf) {
    if (!isObject(e)) continue;
    out.push({
      manager: typeof e.manager === 'string' ? e.manager : '',
      operation: e.operation === 'Apply' ? 'Apply' : 'Update',
      apiVersion: typeof e.apiVersion === 'string' ? e.apiVersion : '',
      time: typeof e.time === 'string' ? e.time : '',
      ...(typeof e.subresource === 'string' ? { subresource: e.subresource } : {}),
      fields: fromFieldsV1(e.fieldsV1),
    });
  }
  return out;
}

function writeEntries(obj: JsonObject, entries: ManagedFieldsEntry[]) {
  const m = isObject(obj.metadata) ? obj.metadata : {};
  obj.metadata = m;
  const kept = entries.filter((e) => e.fields.size > 0);
  if (kept.length === 0) {
    delete m.managedFields;
    return;
  }
  m.managedFields = kept.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    time: e.time,
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(e.fields),
    ...(e.subresource === undefined ? {} : { subresource: e.subresource }),
  }));
}

function sameIdentity(
  e: ManagedFieldsEntry,
  manager: string,
  operation: string,
  subresource: string | undefined,
) {
  return e.manager === manager && e.operation === operation && e.subresource === subresource;
}

/** What a write is, for its managedFields entry. */
export interface Manager {
  readonly manager: string;
  readonly apiVersion: string;
  readonly time: string;
  readonly scope: Scope;
}

/**
 * Records a create, update or non-apply patch in `next.metadata.managedFields`:
 * the fields it changed go to the manager's `Update` entry and leave every
 * other entry (updates never conflict).
 */
export function recordUpdate(
  prev: JsonObject | undefined,
  next: JsonObject,
  shape: Shape,
  m: Manager,
): void {
  const entries = readEntries(prev);
  const before = prev === undefined ? new Map<string, FieldPath>() : fieldsOf(prev, shape, m.scope);
  const after = fieldsOf(next, shape, m.scope);
  const changed: FieldSet = new Map();
  for (const [k, p] of after)
    if (!before.has(k) || !deepEqual(valueAt(prev, p), valueAt(next, p))) changed.set(k, p);
  const removed = [...before.keys()].filter((k) => !after.has(k));
  const subresource = m.scope === 'status' ? 'status' : undefined;
  for (const e of entries) {
    for (const k of removed) e.fields.delete(k);
    for (const k of changed.keys()) e.fields.delete(k);
  }
  if (changed.size > 0) {
    let mine = entries.find((e) => sameIdentity(e, m.manager, 'Update', subresource));
    if (mine === undefined) {
      mine = {
        manager: m.manager,
        operation: 'Update',
        apiVersion: m.apiVersion,
        time: m.time,
        ...(subresource === undefined ? {} : { subresource }),
        fields: new Map(),
      };
      entries.push(mine);
    }
    mine.time = m.time;
    mine.apiVersion = m.apiVersion;
    for (const [k, p] of changed) mine.fields.set(k, p);
  }
  writeEntries(next, entries);
}

function mergeApplied(
  live: JsonValue | undefined,
  applied: JsonValue,
  dotted: string,
  shape: Shape,
): JsonValue {
  if (isObject(applied)) {
    const out: JsonObject = isObject(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(applied))
      out[k] = mergeApplied(out[k], v, dotted === '' ? k : `${dotted}.${k}`, shape);
    return out;
  }
  const keys = shape.listMapKeys[dotted];
  if (Array.isArray(applied) && keys !== undefined && Array.isArray(live)) {
    const out = [...live];
    for (const item of applied) {
      if (!isObject(item)) continue;
      const i = out.findIndex((x) => isObject(x) && keys.every((k) => deepEqual(x[k], item[k])));
      if (i >= 0) out[i] = mergeApplied(out[i], item, dotted, shape);
      else out.push(clone(item));
    }
    return out;
  }
  return clone(applied);
}

/**
 * Server-side apply of `applied` by `m.manager` onto `live` (undefined when
 * the apply creates the object). Fields another manager owns with a
 * different value are conflicts: a 409 unless `force`, which takes them
 * over. Fields this manager applied before and no longer applies are
 * removed when nobody else owns them. Returns the merged object with its
 * managedFields updated.
 */
export function apply(
  live: JsonObject | undefined,
  applied: JsonObject,
  shape: Shape,
  m: Manager,
  force: boolean,
): JsonObject {
  const entries = readEntries(live);
  const subresource = m.scope === 'status' ? 'status' : undefined;
  const mine = fieldsOf(applied, shape, m.scope);
  const prefixes = new Set<string>();
  for (const p of mine.values())
    for (let i = 1; i < p.length; i++) prefixes.add(JSON.stringify(p.slice(0, i)));
  const leaves = [...mine].filter(([k]) => !prefixes.has(k));
  const conflicts: { manager: string; path: FieldPath; entry: ManagedFieldsEntry }[] = [];
  for (const e of entries) {
    if (sameIdentity(e, m.manager, 'Apply', subresource)) continue;
    for (const [k, p] of leaves)
      if (e.fields.has(k) && !deepEqual(valueAt(live, p), valueAt(applied, p)))
        conflicts.push({ manager: e.manager, path: p, entry: e });
  }
  if (conflicts.length > 0 && !force) throw applyConflict(conflicts);
  for (const c of conflicts) c.entry.fields.delete(JSON.stringify(c.path));

  const merged = mergeApplied(live ?? {}, applied, '', shape) as JsonObject;
  const previous = entries.find((e) => sameIdentity(e, m.manager, 'Apply', subresource));
  if (previous !== undefined) {
    const dropped = [...previous.fields].filter(([k]) => !mine.has(k));
    // Deepest first, so a list item goes after its fields.
    dropped.sort((a, b) => b[1].length - a[1].length);
    for (const [k, p] of dropped) {
      const ownedElsewhere = entries.some(
        (e) =>
          e !== previous &&
          [...e.fields.keys()].some((o) => o === k || o.startsWith(`${k.slice(0, -1)},`)),
      );
      if (!ownedElsewhere) removeAt(merged, p);
    }
  }
  const rest = entries.filter((e) => e !== previous);
  for (const e of rest)
    if (e.operation === 'Update') for (const k of mine.keys()) e.fields.delete(k);
  rest.push({
    manager: m.manager,
    operation: 'Apply',
    apiVersion: m.apiVersion,
    time: m.time,
    ...(subresource === undefined ? {} : { subresource }),
    fields: mine,
  });
  if (previous !== undefined) rest.sort((a, b) => entries.indexOf(a) - entries.indexOf(b));
  writeEntries(merged, rest);
  return merged;
}

function printManager(e: ManagedFieldsEntry): string {
  const name =
    e.subresource === undefined
      ? JSON.stringify(e.manager)
      : `${JSON.stringify(e.manager)} with subresource ${JSON.stringify(e.subresource)}`;
  return e.operation === 'Update' ? `${name} using ${e.apiVersion} at ${e.time}` : name;
}

function applyConflict(conflicts: { path: FieldPath; entry: ManagedFieldsEntry }[]): StatusError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.entry)}`,
    field: printPath(c.path),
  }));
  let message: string;
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    message = `Apply failed with 1 conflict: conflict with ${printManager(c.entry)}: ${printPath(c.path)}`;
  } else {
    const byManager = new Map<string, string[]>();
    for (const c of conflicts) {
      const key = printManager(c.entry);
      byManager.set(key, [...(byManager.get(key) ?? []), printPath(c.path)]);
    }
    const lines: string[] = [];
    for (const key of [...byManager.keys()].sort()) {
      lines.push(`conflicts with ${key}:`);
      for (const p of byManager.get(key) ?? []) lines.push(`- ${p}`);
    }
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
  }
  return new StatusError({ message, reason: 'Conflict', details: { causes }, code: 409 });
}
