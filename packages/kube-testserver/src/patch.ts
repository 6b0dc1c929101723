/**
 * Patches: RFC 7386 JSON merge patch, RFC 6902 JSON patch and strategic
 * merge patch for built-in types.
 *
 * @module
 */
import { badRequest, StatusError } from './errors.js';
import { clone, deepEqual, isObject, type JsonObject, type JsonValue } from './json.js';

/** RFC 7386 JSON merge patch: objects merge, `null` deletes, everything else replaces. */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function invalidPatch(): StatusError {
  return new StatusError({
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {},
    code: 422,
  });
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw invalidPatch();
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: JsonValue, path: string[]): { parent: JsonValue; key: string } {
  let cur: JsonValue = doc;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) {
      const i = Number(seg);
      if (!Number.isInteger(i) || i < 0 || i >= cur.length) throw invalidPatch();
      cur = cur[i]!;
    } else if (isObject(cur)) {
      if (!(seg in cur)) throw invalidPatch();
      cur = cur[seg]!;
    } else throw invalidPatch();
  }
  return { parent: cur, key: path.at(-1) ?? '' };
}

function getAt(doc: JsonValue, path: string[]): JsonValue {
  if (path.length === 0) return doc;
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw invalidPatch();
    return parent[i]!;
  }
  if (isObject(parent) && key in parent) return parent[key]!;
  throw invalidPatch();
}

function removeAt(doc: JsonValue, path: string[]): JsonValue {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw invalidPatch();
    return parent.splice(i, 1)[0]!;
  }
  if (isObject(parent) && key in parent) {
    const v = parent[key]!;
    delete parent[key];
    return v;
  }
  throw invalidPatch();
}

function addAt(doc: JsonValue, path: string[], value: JsonValue, replace: boolean): JsonValue {
  if (path.length === 0) return value;
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    if (key === '-' && !replace) parent.push(value);
    else {
      const i = Number(key);
      const max = replace ? parent.length - 1 : parent.length;
      if (!Number.isInteger(i) || i < 0 || i > max) throw invalidPatch();
      if (replace) parent[i] = value;
      else parent.splice(i, 0, value);
    }
  } else if (isObject(parent)) {
    if (replace && !(key in parent)) throw invalidPatch();
    parent[key] = value;
  } else throw invalidPatch();
  return doc;
}

/** RFC 6902 JSON patch. A failing operation is the real server's 422. */
export function jsonPatch(target: JsonValue, ops: JsonValue): JsonValue {
  if (!Array.isArray(ops))
    throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = clone(target);
  for (const op of ops) {
    if (!isObject(op)) throw invalidPatch();
    const path = parsePointer(typeof op.path === 'string' ? op.path : '');
    switch (op.op) {
      case 'add':
        doc = addAt(doc, path, clone(op.value ?? null), false);
        break;
      case 'replace':
        doc = addAt(doc, path, clone(op.value ?? null), true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'test':
        if (!deepEqual(getAt(doc, path), op.value ?? null)) throw invalidPatch();
        break;
      case 'move':
      case 'copy': {
        const from = parsePointer(typeof op.from === 'string' ? op.from : '');
        const v = op.op === 'move' ? removeAt(doc, from) : clone(getAt(doc, from));
        doc = addAt(doc, path, v, false);
        break;
      }
      default:
        throw badRequest(`Unexpected kind: ${String(op.op)}`);
    }
  }
  return doc;
}

/** Lists whose items strategic merge patch merges as a set (`patchStrategy: merge` on a primitive list). */
const PRIMITIVE_MERGE_LISTS = new Set(['metadata.finalizers']);

function childPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Strategic merge patch for built-in types: maps merge, lists named in
 * `listMapKeys` merge by their key (with `$patch: delete|replace`),
 * `metadata.finalizers` merges as a set (with `$deleteFromPrimitiveList`),
 * other lists are replaced. `$setElementOrder` and `$retainKeys` are accepted
 * and dropped.
 */
export function strategicMergePatch(
  target: JsonValue | undefined,
  patch: JsonValue,
  listMapKeys: Readonly<Record<string, readonly string[]>>,
  path = '',
): JsonValue | undefined {
  if (!isObject(patch)) return clone(patch);
  if (patch.$patch === 'delete') return undefined;
  const base: JsonObject = patch.$patch === 'replace' || !isObject(target) ? {} : { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = base[field];
      if (Array.isArray(cur) && Array.isArray(v))
        base[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    const p = childPath(path, k);
    if (v === null) {
      delete base[k];
      continue;
    }
    if (Array.isArray(v)) {
      const keys = listMapKeys[p];
      if (keys !== undefined && keys.length > 0)
        base[k] = mergeKeyedList(base[k], v, keys[0]!, listMapKeys, p);
      else if (PRIMITIVE_MERGE_LISTS.has(p)) {
        const cur = Array.isArray(base[k]) ? [...(base[k] as JsonValue[])] : [];
        for (const x of v) if (!cur.some((y) => deepEqual(x, y))) cur.push(clone(x));
        base[k] = cur;
      } else base[k] = clone(v);
      continue;
    }
    const merged = strategicMergePatch(base[k], v, listMapKeys, p);
    if (merged === undefined) delete base[k];
    else base[k] = merged;
  }
  return base;
}

function mergeKeyedList(
  target: JsonValue | undefined,
  patch: JsonValue[],
  key: string,
  listMapKeys: Readonly<Record<string, readonly string[]>>,
  path: string,
): JsonValue[] {
  if (patch.some((x) => isObject(x) && x.$patch === 'replace'))
    return patch.filter((x) => !(isObject(x) && x.$patch === 'replace')).map((x) => clone(x));
  const out = Array.isArray(target) ? [...target] : [];
  for (const item of patch) {
    if (!isObject(item)) {
      out.push(clone(item));
      continue;
    }
    const i = out.findIndex((x) => isObject(x) && deepEqual(x[key], item[key]));
    if (item.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) out[i] = strategicMergePatch(out[i], item, listMapKeys, path) ?? {};
    else out.push(strategicMergePatch({}, item, listMapKeys, path) ?? {});
  }
  return out;
}
