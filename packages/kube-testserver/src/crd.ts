/**
 * CustomResourceDefinitions: the resource type of CRDs themselves (their
 * validation, the checks of their scale subresource, their finalizer) and
 * the resource types a CRD serves, one per served version.
 *
 * @module
 */
import { humanDuration } from './duration.js';
import { type FieldError, fieldInvalid, fieldNotSupported, fieldRequired } from './errors.js';
import {
  deepEqual,
  isObject,
  type JsonObject,
  type JsonValue,
  meta,
  str,
  strings,
} from './json.js';
import { evalJsonPath, parseJsonPath } from './jsonpath.js';
import { type Column, NAME_COLUMN, type ResourceType, STANDARD_VERBS } from './resource-type.js';
import { scaleOf, validateScalePaths, validateScaleSubresource } from './scale.js';
import {
  applyDefaults,
  asSchema,
  listMapKeys,
  prune,
  type Schema,
  validateSchema,
} from './schema.js';
import { dns1123Subdomain, pathSegmentName, validateObjectMeta } from './validation.js';

export const CRD_GROUP = 'apiextensions.k8s.io';

function arr(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : [];
}

function versionsOf(crd: JsonObject): JsonObject[] {
  const spec = isObject(crd.spec) ? crd.spec : {};
  return arr(spec.versions).filter(isObject);
}

function crdDefaults(obj: JsonObject) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  obj.spec = spec;
  const names = isObject(spec.names) ? spec.names : {};
  spec.names = names;
  if (typeof names.kind === 'string') {
    names.singular ??= names.kind.toLowerCase();
    names.listKind ??= `${names.kind}List`;
  }
  spec.conversion ??= { strategy: 'None' };
  for (const v of versionsOf(obj)) {
    v.served ??= true;
    v.storage ??= false;
  }
}

function structuralErrors(s: Schema, path: string, errs: FieldError[], root: boolean) {
  const free =
    s['x-kubernetes-int-or-string'] === true || s['x-kubernetes-preserve-unknown-fields'] === true;
  if ((s.type === undefined || s.type === '') && !free && !root)
    errs.push(fieldRequired(`${path}.type`, 'must not be empty for specified object fields'));
  for (const [k, p] of Object.entries(s.properties ?? {}))
    structuralErrors(p, `${path}.properties[${k}]`, errs, false);
  if (s.items !== undefined) structuralErrors(s.items, `${path}.items`, errs, false);
  if (isObject(s.additionalProperties))
    structuralErrors(s.additionalProperties, `${path}.additionalProperties`, errs, false);
  if (s.default !== undefined && s.properties !== undefined && isObject(s.default)) {
    const copy = structuredClone(s.default) as JsonObject;
    const unknown = prune(copy, s);
    if (unknown.length > 0)
      errs.push(fieldInvalid(`${path}.default`, s.default, 'must not have unknown fields'));
  }
}

/**
 * The checks of `subresources.scale`. The v1 conversion moves subresources
 * every version declares alike to the internal spec's top level, so the
 * real server names them `spec.subresources` then, and
 * `spec.versions[i].subresources` only when the versions differ.
 */
function subresourceErrors(versions: JsonObject[]): FieldError[] {
  if (versions.length === 0) return [];
  const first = versions[0]!.subresources;
  if (versions.every((v) => deepEqual(v.subresources, first))) {
    const scale = scaleOf(first);
    return scale === undefined ? [] : validateScaleSubresource(scale, 'spec.subresources');
  }
  return versions.flatMap((v, i) => {
    const scale = scaleOf(v.subresources);
    return scale === undefined
      ? []
      : validateScaleSubresource(scale, `spec.versions[${i}].subresources`);
  });
}

function crdValidate(obj: JsonObject, old: JsonObject | undefined): FieldError[] {
  const errs = validateObjectMeta(obj, false, dns1123Subdomain);
  const spec = isObject(obj.spec) ? obj.spec : {};
  const names = isObject(spec.names) ? spec.names : {};
  const group = str(spec, 'group') ?? '';
  const plural = str(names, 'plural') ?? '';
  const name = str(meta(obj), 'name') ?? '';
  if (group === '') errs.push(fieldRequired('spec.group'));
  else if (!group.includes('.'))
    errs.push(fieldInvalid('spec.group', group, 'should be a domain with at least one dot'));
  if (plural === '') errs.push(fieldRequired('spec.names.plural'));
  if (typeof names.kind !== 'string' || names.kind === '')
    errs.push(fieldRequired('spec.names.kind'));
  if (name !== '' && plural !== '' && group !== '' && name !== `${plural}.${group}`)
    errs.push(fieldInvalid('metadata.name', name, 'must be spec.names.plural+"."+spec.group'));
  const scope = spec.scope;
  if (scope !== 'Namespaced' && scope !== 'Cluster') {
    if (scope === undefined) errs.push(fieldRequired('spec.scope'));
    else errs.push(fieldNotSupported('spec.scope', scope, ['Cluster', 'Namespaced']));
  }
  const versions = versionsOf(obj);
  if (versions.length === 0)
    errs.push(
      fieldRequired('spec.versions', 'must have exactly one version marked as storage version'),
    );
  else if (versions.filter((v) => v.storage === true).length !== 1)
    errs.push(
      fieldInvalid('spec.versions', '', 'must have exactly one version marked as storage version'),
    );
  versions.forEach((v, i) => {
    const schema = isObject(v.schema) ? v.schema.openAPIV3Schema : undefined;
    if (!isObject(schema)) {
      errs.push(
        fieldRequired(`spec.versions[${i}].schema.openAPIV3Schema`, 'schemas are required'),
      );
      return;
    }
    const s = asSchema(schema);
    if (s.type !== 'object')
      errs.push(
        fieldInvalid(
          `spec.versions[${i}].schema.openAPIV3Schema.type`,
          s.type ?? '',
          'must be object at the root',
        ),
      );
    structuralErrors(s, `spec.versions[${i}].schema.openAPIV3Schema`, errs, true);
  });
  errs.push(...subresourceErrors(versions));
  if (old !== undefined) {
    const oldSpec = isObject(old.spec) ? old.spec : {};
    if (oldSpec.scope !== spec.scope)
      errs.push(fieldInvalid('spec.scope', scope, 'field is immutable'));
    if (oldSpec.group !== spec.group)
      errs.push(fieldInvalid('spec.group', group, 'field is immutable'));
  }
  return errs;
}

function crdPrepareCreate(obj: JsonObject, ctx: { now: Date }) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const storage = versionsOf(obj).find((v) => v.storage === true);
  const now = `${ctx.now.toISOString().slice(0, 19)}Z`;
  obj.status = {
    acceptedNames: structuredClone(isObject(spec.names) ? spec.names : {}),
    conditions: [
      {
        type: 'NamesAccepted',
        status: 'True',
        lastTransitionTime: now,
        reason: 'NoConflicts',
        message: 'no conflicts found',
      },
      {
        type: 'Established',
        status: 'True',
        lastTransitionTime: now,
        reason: 'InitialNamesAccepted',
        message: 'the initial names have been accepted',
      },
    ],
    storedVersions: storage === undefined ? [] : [storage.name ?? ''],
  };
  const m = meta(obj);
  const finalizers = strings(m, 'finalizers');
  if (!finalizers.includes(CRD_FINALIZER)) m.finalizers = [...finalizers, CRD_FINALIZER];
}

/** The finalizer the real server puts on every CRD until its objects are gone. */
export const CRD_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

/** The resource type of CustomResourceDefinitions themselves. */
export function crdType(): ResourceType {
  return {
    group: CRD_GROUP,
    version: 'v1',
    resource: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    listKind: 'CustomResourceDefinitionList',
    singular: 'customresourcedefinition',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    verbs: STANDARD_VERBS,
    statusSubresource: true,
    custom: false,
    generation: true,
    deleteReturnsObject: false,
    columns: [
      NAME_COLUMN,
      {
        name: 'Created At',
        type: 'date',
        format: '',
        description:
          'CreationTimestamp is a timestamp representing the server time when this object was created.',
        priority: 0,
        cell: (o) => (isObject(o.metadata) ? (o.metadata.creationTimestamp ?? null) : null),
      },
    ],
    listMapKeys: { 'metadata.ownerReferences': ['uid'], 'spec.versions': ['name'] },
    defaults: crdDefaults,
    prepareCreate: crdPrepareCreate,
    validate: crdValidate,
  };
}

function printerColumn(def: JsonObject): Column | undefined {
  const path = str(def, 'jsonPath') ?? '';
  const steps = parseJsonPath(path);
  const type = str(def, 'type') ?? 'string';
  if (steps === undefined) return undefined;
  return {
    name: str(def, 'name') ?? '',
    type,
    format: str(def, 'format') ?? '',
    description:
      str(def, 'description') ?? `Custom resource definition column (in JSONPath format): ${path}`,
    priority: typeof def.priority === 'number' ? def.priority : 0,
    cell: (o, now) => {
      const found = evalJsonPath(steps, o);
      if (found.length === 0) return null;
      const v = found[0]!;
      switch (type) {
        case 'string':
          return typeof v === 'string' ? v : JSON.stringify(v);
        case 'integer':
          return typeof v === 'number' ? Math.trunc(v) : null;
        case 'number':
          return typeof v === 'number' ? v : null;
        case 'boolean':
          return typeof v === 'boolean' ? v : null;
        case 'date': {
          if (typeof v !== 'string') return null;
          const t = Date.parse(v);
          return Number.isNaN(t) ? '<invalid>' : humanDuration(now - t);
        }
        default:
          return null;
      }
    },
  };
}

/**
 * The resource types a CRD serves, one per served version: schema pruning,
 * defaults and validation, the status subresource, printer columns.
 */
export function customResourceTypes(crd: JsonObject): ResourceType[] {
  const spec = isObject(crd.spec) ? crd.spec : {};
  const names = isObject(spec.names) ? spec.names : {};
  const group = str(spec, 'group') ?? '';
  const kind = str(names, 'kind') ?? '';
  const namespaced = spec.scope !== 'Cluster';
  const out: ResourceType[] = [];
  const replicasPaths: Record<string, string | null> = {};
  for (const v of versionsOf(crd))
    replicasPaths[`${group}/${str(v, 'name') ?? ''}`] =
      scaleOf(v.subresources)?.specReplicasPath ?? null;
  for (const v of versionsOf(crd)) {
    if (v.served === false) continue;
    const version = str(v, 'name') ?? '';
    const schema = asSchema(isObject(v.schema) ? v.schema.openAPIV3Schema : undefined);
    const subresources = isObject(v.subresources) ? v.subresources : {};
    const status = isObject(subresources.status);
    const scale = scaleOf(subresources);
    const defs = arr(v.additionalPrinterColumns).filter(isObject);
    const columns: Column[] = [NAME_COLUMN];
    for (const d of defs.length > 0
      ? defs
      : [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' } as JsonObject]) {
      const c = printerColumn(d);
      if (c !== undefined) columns.push(c);
    }
    out.push({
      group,
      version,
      resource: str(names, 'plural') ?? '',
      kind,
      listKind: str(names, 'listKind') ?? `${kind}List`,
      singular: str(names, 'singular') ?? kind.toLowerCase(),
      namespaced,
      shortNames: strings(names, 'shortNames'),
      categories: strings(names, 'categories'),
      verbs: STANDARD_VERBS,
      statusSubresource: status,
      ...(scale === undefined ? {} : { scale, replicasPaths }),
      custom: true,
      generation: true,
      deleteReturnsObject: false,
      columns,
      listMapKeys: { 'metadata.ownerReferences': ['uid'], ...listMapKeys(schema) },
      schema,
      decode: (obj) => prune(obj, schema),
      defaults: (obj) => applyDefaults(obj, schema),
      validate: (obj) => {
        const errs = validateObjectMeta(obj, namespaced, pathSegmentName);
        const body: JsonObject = {};
        for (const [k, x] of Object.entries(obj))
          if (k !== 'apiVersion' && k !== 'kind' && k !== 'metadata') body[k] = x;
        const rootless: Schema = { ...schema, properties: { ...(schema.properties ?? {}) } };
        delete rootless.properties!.metadata;
        delete rootless.properties!.apiVersion;
        delete rootless.properties!.kind;
        rootless.required = (schema.required ?? []).filter(
          (r) => !['apiVersion', 'kind', 'metadata'].includes(r),
        );
        validateSchema(body, rootless, '', errs);
        const fixed = errs.map((e) =>
          e.field.startsWith('.') ? { ...e, field: e.field.slice(1) } : e,
        );
        return scale === undefined ? fixed : [...fixed, ...validateScalePaths(obj, scale)];
      },
    } as ResourceType);
  }
  return out;
}
