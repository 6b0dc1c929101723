/**
 * OpenAPI v3 documents (`/openapi/v3`): the root listing and one document
 * per group/version, with the hashes kubectl caches them by.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from './json.js';
import type { Registry } from './registry.js';
import { groupVersion, type ResourceType } from './resource-type.js';

const PATCH_REF = { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch' };
const OBJECT_META_REF = '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

function query(name: string, description: string): JsonObject {
  return { name, in: 'query', description, schema: { type: 'string', uniqueItems: true } };
}

const DRY_RUN = query(
  'dryRun',
  'When present, indicates that modifications should not be persisted.',
);
const FIELD_MANAGER = query(
  'fieldManager',
  'fieldManager is a name associated with the actor or entity that is making these changes.',
);
const FIELD_VALIDATION = query(
  'fieldValidation',
  'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn (the default), Strict.',
);
const FORCE: JsonObject = {
  name: 'force',
  in: 'query',
  description: 'Force is going to "force" Apply requests.',
  schema: { type: 'boolean', uniqueItems: true },
};

function componentName(t: ResourceType): string {
  const group = t.group === '' ? 'io.k8s.api.core' : t.group.split('.').reverse().join('.');
  return `${group}.${t.version}.${t.kind}`;
}

const SCALE_NAME = 'io.k8s.api.autoscaling.v1.Scale';
const SCALE_GVK = { group: 'autoscaling', version: 'v1', kind: 'Scale' };

/** The `autoscaling/v1 Scale` component every scale subresource reads and writes. */
const SCALE_SCHEMA: JsonObject = {
  description: 'Scale represents a scaling request for a resource.',
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { allOf: [{ $ref: OBJECT_META_REF }] },
    spec: {
      type: 'object',
      properties: { replicas: { type: 'integer', format: 'int32' } },
    },
    status: {
      type: 'object',
      required: ['replicas'],
      properties: {
        replicas: { type: 'integer', format: 'int32', default: 0 },
        selector: { type: 'string' },
      },
    },
  },
  'x-kubernetes-group-version-kind': [SCALE_GVK],
};

function operations(
  t: ResourceType,
  ref: JsonObject,
  sub: string,
  gvk: JsonObject = { group: t.group, version: t.version, kind: t.kind },
): JsonObject {
  const json = { 'application/json': { schema: ref } };
  const ok = { '200': { description: 'OK', content: json } };
  const patchTypes: JsonObject = {
    'application/apply-patch+yaml': { schema: PATCH_REF },
    'application/json-patch+json': { schema: PATCH_REF },
    'application/merge-patch+json': { schema: PATCH_REF },
  };
  if (!t.custom) patchTypes['application/strategic-merge-patch+json'] = { schema: PATCH_REF };
  const id = `${t.kind}${sub}`;
  return {
    get: {
      operationId: `read${id}`,
      responses: ok,
      'x-kubernetes-action': 'get',
      'x-kubernetes-group-version-kind': gvk,
    },
    put: {
      operationId: `replace${id}`,
      parameters: [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION],
      requestBody: { content: { '*/*': { schema: ref } }, required: true },
      responses: ok,
      'x-kubernetes-action': 'put',
      'x-kubernetes-group-version-kind': gvk,
    },
    patch: {
      operationId: `patch${id}`,
      parameters: [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION, FORCE],
      requestBody: { content: patchTypes, required: true },
      responses: ok,
      'x-kubernetes-action': 'patch',
      'x-kubernetes-group-version-kind': gvk,
    },
    ...(sub === ''
      ? {
          delete: {
            operationId: `delete${id}`,
            parameters: [DRY_RUN],
            responses: { '200': { description: 'OK' } },
            'x-kubernetes-action': 'delete',
            'x-kubernetes-group-version-kind': gvk,
          },
        }
      : {}),
  };
}

function collection(t: ResourceType, ref: JsonObject): JsonObject {
  const gvk = { group: t.group, version: t.version, kind: t.kind };
  return {
    get: {
      operationId: `list${t.kind}`,
      responses: { '200': { description: 'OK' } },
      'x-kubernetes-action': 'list',
      'x-kubernetes-group-version-kind': gvk,
    },
    post: {
      operationId: `create${t.kind}`,
      parameters: [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION],
      requestBody: { content: { '*/*': { schema: ref } }, required: true },
      responses: { '201': { description: 'Created' } },
      'x-kubernetes-action': 'post',
      'x-kubernetes-group-version-kind': gvk,
    },
  };
}

function crSchema(t: ResourceType): JsonObject {
  const s = JSON.parse(JSON.stringify(t.schema ?? { type: 'object' })) as JsonObject;
  const props = (
    typeof s.properties === 'object' && s.properties !== null ? s.properties : {}
  ) as JsonObject;
  props.apiVersion = { type: 'string' };
  props.kind = { type: 'string' };
  props.metadata = { allOf: [{ $ref: OBJECT_META_REF }] };
  s.properties = props;
  s['x-kubernetes-group-version-kind'] = [{ group: t.group, version: t.version, kind: t.kind }];
  return s;
}

/** The OpenAPI v3 document of one group/version, or undefined when it is not served. */
export function groupVersionDocument(
  registry: Registry,
  group: string,
  version: string,
  serverVersion: string,
): JsonObject | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  const root = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  const paths: JsonObject = {};
  const schemas: JsonObject = {
    'io.k8s.apimachinery.pkg.apis.meta.v1.Patch': {
      description:
        'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.',
      type: 'object',
    },
    'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { type: 'object' },
  };
  for (const t of types) {
    const ref: JsonObject = t.custom
      ? { $ref: `#/components/schemas/${componentName(t)}` }
      : { type: 'object' };
    if (t.custom) schemas[componentName(t)] = crSchema(t);
    const base = t.namespaced
      ? `${root}/namespaces/{namespace}/${t.resource}`
      : `${root}/${t.resource}`;
    paths[base] = collection(t, ref);
    paths[`${base}/{name}`] = operations(t, ref, '');
    if (t.statusSubresource) paths[`${base}/{name}/status`] = operations(t, ref, 'Status');
    if (t.scale !== undefined) {
      schemas[SCALE_NAME] = SCALE_SCHEMA;
      paths[`${base}/{name}/scale`] = operations(
        t,
        { $ref: `#/components/schemas/${SCALE_NAME}` },
        'Scale',
        SCALE_GVK,
      );
    }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: serverVersion },
    paths,
    components: { schemas },
  };
}

/** A stable hash of a document, for the `?hash=` of `/openapi/v3`. */
export function documentHash(doc: JsonValue): string {
  return createHash('sha512').update(JSON.stringify(doc)).digest('hex').slice(0, 128).toUpperCase();
}

/** `GET /openapi/v3`: every group/version's document path. */
export function openapiRoot(registry: Registry, serverVersion: string): JsonObject {
  const paths: JsonObject = {};
  for (const g of registry.groupVersions()) {
    for (const v of g.versions) {
      const doc = groupVersionDocument(registry, g.group, v, serverVersion);
      if (doc === undefined) continue;
      const rel =
        g.group === '' ? `api/${v}` : `apis/${groupVersion({ group: g.group, version: v })}`;
      paths[rel] = { serverRelativeURL: `/openapi/v3/${rel}?hash=${documentHash(doc)}` };
    }
  }
  return { paths };
}
