/**
 * Discovery: aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1)
 * and the legacy `APIVersions` and `APIGroupList` answers.
 *
 * @module
 */
import type { JsonObject, JsonValue } from './json.js';
import type { Registry } from './registry.js';
import { groupVersion, type ResourceType } from './resource-type.js';

/** The content type of aggregated discovery (`apidiscovery.k8s.io/v2`). */
export const AGGREGATED_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1 =
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** Which aggregated discovery version an `Accept` header asks for first, if any. */
export function aggregatedVersion(accept: string): 'v2' | 'v2beta1' | undefined {
  for (const part of accept.split(',')) {
    const params = new Map(
      part
        .split(';')
        .slice(1)
        .map((p) => p.trim().split('=') as [string, string]),
    );
    if (params.get('g') === 'apidiscovery.k8s.io' && params.get('as') === 'APIGroupDiscoveryList') {
      const v = params.get('v');
      if (v === 'v2' || v === 'v2beta1') return v;
    }
  }
  return undefined;
}

/** Kubernetes version priority: GA before beta before alpha, then higher numbers first. */
export function compareVersions(a: string, b: string): number {
  const rank = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (m === null) return [3, 0, 0] as const;
    const level = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
    return [level, -Number(m[1]), -Number(m[3] ?? 0)] as const;
  };
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < 3; i++) if (ra[i]! !== rb[i]!) return ra[i]! - rb[i]!;
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortedGroupVersions(registry: Registry) {
  return registry
    .groupVersions()
    .map((g) => ({ group: g.group, versions: [...g.versions].sort(compareVersions) }));
}

const SUBRESOURCE_VERBS = ['get', 'patch', 'update'];

/** The `responseKind` of every scale subresource. */
const SCALE_KIND = { group: 'autoscaling', version: 'v1', kind: 'Scale' };

function resourceDiscovery(t: ResourceType): JsonObject {
  const kind = { group: t.group, version: t.version, kind: t.kind };
  const subresources: JsonValue[] = [];
  if (t.statusSubresource)
    subresources.push({ subresource: 'status', responseKind: kind, verbs: SUBRESOURCE_VERBS });
  if (t.scale !== undefined)
    subresources.push({ subresource: 'scale', responseKind: SCALE_KIND, verbs: SUBRESOURCE_VERBS });
  return {
    resource: t.resource,
    responseKind: kind,
    scope: t.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: t.singular,
    verbs: [...t.verbs],
    ...(t.shortNames.length > 0 ? { shortNames: [...t.shortNames] } : {}),
    ...(t.categories.length > 0 ? { categories: [...t.categories] } : {}),
    ...(subresources.length > 0 ? { subresources } : {}),
  };
}

/** `GET /api` or `/apis` as aggregated discovery (`APIGroupDiscoveryList`). */
export function aggregatedDiscovery(
  registry: Registry,
  core: boolean,
  version: 'v2' | 'v2beta1',
): JsonObject {
  const items: JsonValue[] = [];
  for (const g of sortedGroupVersions(registry)) {
    if ((g.group === '') !== core) continue;
    items.push({
      metadata: { ...(core ? {} : { name: g.group }), creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        resources: registry.inGroupVersion(g.group, v).map(resourceDiscovery),
        freshness: 'Current',
      })),
    });
  }
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items,
  };
}

/** `GET /api` (legacy): `APIVersions`. */
export function apiVersions(serverAddress: string): JsonObject {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(group: string, versions: string[]): JsonObject {
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: vs, preferredVersion: vs[0] ?? {} };
}

/** `GET /apis` (legacy): `APIGroupList`. */
export function apiGroupList(registry: Registry): JsonObject {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: sortedGroupVersions(registry)
      .filter((g) => g.group !== '')
      .map((g) => apiGroup(g.group, g.versions)),
  };
}

/** `GET /apis/<group>`: `APIGroup`, or undefined when the group is not served. */
export function apiGroupDoc(registry: Registry, group: string): JsonObject | undefined {
  const g = sortedGroupVersions(registry).find((x) => x.group === group && group !== '');
  return g === undefined
    ? undefined
    : { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g.group, g.versions) };
}

/** `GET /api/v1` or `/apis/<group>/<version>`: `APIResourceList`, or undefined when not served. */
export function apiResourceList(
  registry: Registry,
  group: string,
  version: string,
): JsonObject | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  const resources: JsonValue[] = [];
  for (const t of types) {
    resources.push({
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: [...t.verbs],
      ...(t.shortNames.length > 0 ? { shortNames: [...t.shortNames] } : {}),
      ...(t.categories.length > 0 ? { categories: [...t.categories] } : {}),
    });
    if (t.statusSubresource)
      resources.push({
        name: `${t.resource}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: SUBRESOURCE_VERBS,
      });
    if (t.scale !== undefined)
      resources.push({
        name: `${t.resource}/scale`,
        singularName: '',
        namespaced: t.namespaced,
        ...SCALE_KIND,
        verbs: SUBRESOURCE_VERBS,
      });
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupVersion({ group, version }),
    resources,
  };
}
