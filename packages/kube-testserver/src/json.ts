// JSON as the API server reads and writes it: the value types, and the small readers and copies
// every handler uses (objects, metadata, strings, maps, paths).
/** A JSON value as the API server reads and writes it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object: every Kubernetes object, list and Status is one. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Whether `v` is a JSON object (not an array, not null). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A deep copy of a JSON value. */
export function clone<T extends JsonValue>(v: T): T {
  return structuredClone(v);
}

/** Structural equality of two JSON values (object key order ignored). */
export function deepEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    for (const k of ka) if (!(k in b) || !deepEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/** `obj.metadata`, created when missing. */
export function meta(obj: JsonObject): JsonObject {
  let m = obj.metadata;
  if (!isObject(m)) {
    m = {};
    obj.metadata = m;
  }
  return m;
}

/** A string field of an object, or undefined when absent or not a string. */
export function str(obj: JsonObject | undefined, key: string): string | undefined {
  const v = obj?.[key];
  return typeof v === 'string' ? v : undefined;
}

/** The string array at `obj[key]`, or `[]`. */
export function strings(obj: JsonObject | undefined, key: string): string[] {
  const v = obj?.[key];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** The string map at `obj[key]` (labels, annotations), or `{}`. */
export function stringMap(obj: JsonObject | undefined, key: string): Record<string, string> {
  const v = obj?.[key];
  const out: Record<string, string> = {};
  if (isObject(v)) for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

/** Reads a dotted path (`spec.nodeName`) from an object. */
export function getPath(
  obj: JsonValue | undefined,
  path: readonly string[],
): JsonValue | undefined {
  let cur: JsonValue | undefined = obj;
  for (const p of path) {
    if (!isObject(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}
