/**
 * Structural schemas of custom resources: reading one, pruning undeclared
 * fields, defaulting, validation with the real server's field paths and
 * messages, and the list-map keys a schema declares.
 *
 * @module
 */
import {
  type FieldError,
  fieldDuplicate,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  fieldTooLong,
} from './errors.js';
import { clone, deepEqual, isObject, type JsonObject, type JsonValue } from './json.js';

/** The subset of an OpenAPI v3 schema (`JSONSchemaProps`) that CRDs use and this server enforces. */
export interface Schema {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: JsonValue[];
  default?: JsonValue;
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

/** Reads a schema from JSON without trusting its shape. */
export function asSchema(v: JsonValue | undefined): Schema {
  return (isObject(v) ? v : {}) as unknown as Schema;
}

function child(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Drops fields the schema does not declare (as the real server's pruning),
 * returning their paths (`spec.foo`) for strict field validation.
 * `metadata`, `apiVersion` and `kind` at the root are left alone.
 */
export function prune(obj: JsonObject, schema: Schema): string[] {
  const unknown: string[] = [];
  const props = schema.properties ?? {};
  for (const key of Object.keys(obj)) {
    if (key === 'apiVersion' || key === 'kind' || key === 'metadata') continue;
    const s = props[key];
    if (s === undefined) {
      if (schema['x-kubernetes-preserve-unknown-fields'] === true) continue;
      unknown.push(key);
      delete obj[key];
      continue;
    }
    pruneValue(obj[key], s, key, unknown);
  }
  return unknown;
}

function pruneValue(v: JsonValue | undefined, s: Schema, path: string, unknown: string[]) {
  if (Array.isArray(v)) {
    const items = s.items;
    if (items !== undefined)
      for (const [i, x] of v.entries()) pruneValue(x, items, `${path}[${i}]`, unknown);
    return;
  }
  if (!isObject(v)) return;
  if (s['x-kubernetes-embedded-resource'] === true && s.properties === undefined) return;
  if (s.properties !== undefined) {
    for (const key of Object.keys(v)) {
      const p = s.properties[key];
      if (p !== undefined) pruneValue(v[key], p, child(path, key), unknown);
      else if (
        s['x-kubernetes-embedded-resource'] === true &&
        ['apiVersion', 'kind', 'metadata'].includes(key)
      )
        continue;
      else if (s['x-kubernetes-preserve-unknown-fields'] !== true) {
        unknown.push(child(path, key));
        delete v[key];
      }
    }
    return;
  }
  if (isObject(s.additionalProperties)) {
    for (const key of Object.keys(v))
      pruneValue(v[key], s.additionalProperties, child(path, key), unknown);
    return;
  }
  if (s.additionalProperties === true || s['x-kubernetes-preserve-unknown-fields'] === true) return;
  // An object schema with neither properties nor additionalProperties keeps no fields.
  if (s.type === 'object') {
    for (const key of Object.keys(v)) {
      unknown.push(child(path, key));
      delete v[key];
    }
  }
}

/** Sets each missing property that has a `default`, as the real server's structural defaulting. */
export function applyDefaults(v: JsonValue | undefined, s: Schema): void {
  if (Array.isArray(v)) {
    if (s.items !== undefined) for (const x of v) applyDefaults(x, s.items);
    return;
  }
  if (!isObject(v)) return;
  if (s.properties !== undefined) {
    for (const [key, p] of Object.entries(s.properties)) {
      if (p.default !== undefined && (!(key in v) || (v[key] === null && p.nullable !== true)))
        v[key] = clone(p.default);
      if (key in v) applyDefaults(v[key], p);
    }
  } else if (isObject(s.additionalProperties)) {
    for (const key of Object.keys(v)) applyDefaults(v[key], s.additionalProperties);
  }
}

function jsonType(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: JsonValue, s: Schema): boolean {
  if (s['x-kubernetes-int-or-string'] === true)
    return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
  switch (s.type) {
    case undefined:
    case '':
      return true;
    case 'object':
      return isObject(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    default:
      return true;
  }
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Validates a value against a structural schema, with the field paths and
 * messages of the real server (`spec.port in body must be of type integer:
 * "string"`).
 */
export function validateSchema(v: JsonValue, s: Schema, path: string, errs: FieldError[]): void {
  if (v === null) {
    if (s.nullable === true) return;
    if (s.type !== undefined && s.type !== '') {
      errs.push({
        ...fieldInvalid(path, null, `${path} in body must be of type ${s.type}: "null"`),
        reason: 'FieldValueTypeInvalid',
      });
    }
    return;
  }
  if (!typeMatches(v, s)) {
    const want = s['x-kubernetes-int-or-string'] === true ? 'integer,string' : s.type;
    errs.push({
      ...fieldInvalid(path, v, `${path} in body must be of type ${want}: "${jsonType(v)}"`),
      reason: 'FieldValueTypeInvalid',
    });
    return;
  }
  if (s.enum !== undefined && !s.enum.some((e) => deepEqual(e, v)))
    errs.push(fieldNotSupported(path, v, s.enum));
  if (typeof v === 'number') {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum))
      errs.push(
        fieldInvalid(
          path,
          v,
          `${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}`,
        ),
      );
    if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum))
      errs.push(
        fieldInvalid(
          path,
          v,
          `${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}`,
        ),
      );
  }
  if (typeof v === 'string') {
    const len = [...v].length;
    if (s.maxLength !== undefined && len > s.maxLength) errs.push(fieldTooLong(path, s.maxLength));
    if (s.minLength !== undefined && len < s.minLength)
      errs.push(
        fieldInvalid(path, v, `${path} in body should be at least ${s.minLength} chars long`),
      );
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v))
      errs.push(fieldInvalid(path, v, `${path} in body should match '${s.pattern}'`));
    if (s.format === 'date-time' && !DATE_TIME.test(v))
      errs.push(fieldInvalid(path, v, `${path} in body must be of type date-time: "${v}"`));
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems)
      errs.push({
        field: path,
        reason: 'FieldValueTooMany',
        body: `Too many: ${v.length}: must have at most ${s.maxItems} items`,
      });
    if (s.minItems !== undefined && v.length < s.minItems)
      errs.push(fieldInvalid(path, v, `${path} in body should have at least ${s.minItems} items`));
    const items = s.items;
    if (items !== undefined)
      for (const [i, x] of v.entries()) validateSchema(x, items, `${path}[${i}]`, errs);
    listTypeErrors(v, s, path, errs);
  }
  if (isObject(v)) {
    for (const r of s.required ?? []) if (!(r in v)) errs.push(fieldRequired(child(path, r)));
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties)
      errs.push({
        field: path,
        reason: 'FieldValueTooMany',
        body: `Too many: ${n}: must have at most ${s.maxProperties} items`,
      });
    if (s.minProperties !== undefined && n < s.minProperties)
      errs.push(
        fieldInvalid(path, v, `${path} in body should have at least ${s.minProperties} properties`),
      );
    for (const [key, x] of Object.entries(v)) {
      const p =
        s.properties?.[key] ??
        (isObject(s.additionalProperties) ? s.additionalProperties : undefined);
      if (p !== undefined) validateSchema(x, p, child(path, key), errs);
    }
  }
}

function listTypeErrors(v: JsonValue[], s: Schema, path: string, errs: FieldError[]) {
  const type = s['x-kubernetes-list-type'];
  if (type === 'set') {
    v.forEach((x, i) => {
      if (v.slice(0, i).some((y) => deepEqual(x, y))) errs.push(fieldDuplicate(`${path}[${i}]`, x));
    });
  } else if (type === 'map') {
    const keys = s['x-kubernetes-list-map-keys'] ?? [];
    const seen: JsonValue[] = [];
    v.forEach((x, i) => {
      if (!isObject(x)) return;
      const k: JsonObject = {};
      for (const key of keys) if (key in x) k[key] = x[key]!;
      if (seen.some((y) => deepEqual(y, k))) errs.push(fieldDuplicate(`${path}[${i}]`, k));
      seen.push(k);
    });
  }
}

/**
 * The list-map keys a schema declares (`x-kubernetes-list-type: map`), by
 * field path with list positions left out (`spec.ports` → `name`).
 */
export function listMapKeys(
  s: Schema,
  path = '',
  out: Record<string, string[]> = {},
): Record<string, string[]> {
  if (s['x-kubernetes-list-type'] === 'map' && s['x-kubernetes-list-map-keys'] !== undefined)
    out[path] = s['x-kubernetes-list-map-keys'];
  if (s.items !== undefined) listMapKeys(s.items, path, out);
  for (const [k, p] of Object.entries(s.properties ?? {})) listMapKeys(p, child(path, k), out);
  if (isObject(s.additionalProperties)) listMapKeys(s.additionalProperties, path, out);
  return out;
}
