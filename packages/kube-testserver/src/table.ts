/**
 * `meta.k8s.io/v1 Table` and PartialObjectMetadata answers: what a
 * client's `Accept` header asks for, and the rendering of objects in it.
 *
 * @module
 */
import { badRequest } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import type { ResourceType } from './resource-type.js';

/** What a client asked to get back (`Accept` header): the object, a Table, or only metadata. */
export type Rendering = 'object' | 'table' | 'metadata';

/** `includeObject` of `TableOptions`. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function parseIncludeObject(v: string | null): IncludeObject {
  if (v === null || v === '' || v === 'Metadata') return 'Metadata';
  if (v === 'None' || v === 'Object') return v;
  throw badRequest(`unrecognized includeObject value: "${v}"`);
}

function partial(o: JsonObject, apiVersion: string): JsonObject {
  return { kind: 'PartialObjectMetadata', apiVersion, metadata: o.metadata ?? {} };
}

/**
 * A `meta.k8s.io/v1 Table` of objects, with the type's columns; rows carry
 * PartialObjectMetadata, the full object or nothing, as `includeObject` says.
 */
export function toTable(
  t: ResourceType,
  objects: readonly JsonObject[],
  listMeta: JsonObject,
  opts: { includeObject: IncludeObject; noHeaders: boolean; apiVersion?: string; now?: number },
): JsonObject {
  const now = opts.now ?? Date.now();
  const apiVersion = opts.apiVersion ?? 'meta.k8s.io/v1';
  const rows: JsonValue[] = objects.map((o) => ({
    cells: t.columns.map((c) => c.cell(o, now)),
    object:
      opts.includeObject === 'Object'
        ? o
        : opts.includeObject === 'None'
          ? null
          : partial(o, apiVersion),
  }));
  return {
    kind: 'Table',
    apiVersion,
    metadata: listMeta,
    ...(opts.noHeaders
      ? {}
      : {
          columnDefinitions: t.columns.map((c) => ({
            name: c.name,
            type: c.type,
            format: c.format,
            description: c.description,
            priority: c.priority,
          })),
        }),
    rows,
  };
}

/** PartialObjectMetadata for one object. */
export function toPartial(o: JsonObject, apiVersion = 'meta.k8s.io/v1'): JsonObject {
  return partial(o, apiVersion);
}
