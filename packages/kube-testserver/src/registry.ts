/**
 * The registry of the resource types served now: the built-ins and one per
 * served version of each CRD, kept current as CRDs change.
 *
 * @module
 */
import { builtinTypes } from './builtins.js';
import { appsTypes } from './builtins-apps.js';
import { CRD_GROUP, crdType, customResourceTypes } from './crd.js';
import { isObject, type JsonObject } from './json.js';
import { groupVersion, type ResourceType, resourceKey } from './resource-type.js';
import type { Store } from './store.js';

/** The resource types served now: the built-ins and one per served version of each CRD. */
export class Registry {
  #types: ResourceType[] = [];
  readonly #builtins: ResourceType[] = [...builtinTypes(), ...appsTypes(), crdType()];

  constructor(private readonly store: Store) {
    this.refresh();
  }

  /** Rebuilds the custom resource types from the stored CRDs. */
  refresh(): void {
    const custom: ResourceType[] = [];
    for (const { object } of this.store.list(`${CRD_GROUP}/customresourcedefinitions`)) {
      if (isEstablished(object)) custom.push(...customResourceTypes(object));
    }
    this.#types = [...this.#builtins, ...custom];
  }

  all(): readonly ResourceType[] {
    return this.#types;
  }

  find(group: string, version: string, resource: string): ResourceType | undefined {
    return this.#types.find(
      (t) => t.group === group && t.version === version && t.resource === resource,
    );
  }

  /** Every served group/version, core first, in the order discovery lists them. */
  groupVersions(): { group: string; versions: string[] }[] {
    const out: { group: string; versions: string[] }[] = [];
    for (const t of this.#types) {
      let g = out.find((x) => x.group === t.group);
      if (g === undefined) {
        g = { group: t.group, versions: [] };
        out.push(g);
      }
      if (!g.versions.includes(t.version)) g.versions.push(t.version);
    }
    return out;
  }

  /** The types of one group/version. */
  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.#types.filter((t) => t.group === group && t.version === version);
  }

  /** Whether any type is stored under this key (custom resources after their CRD is gone are not). */
  has(key: string): boolean {
    return this.#types.some((t) => resourceKey(t) === key);
  }

  /** One type per storage key (the first served version), for controllers that walk every object. */
  byKey(): Map<string, ResourceType> {
    const m = new Map<string, ResourceType>();
    for (const t of this.#types) if (!m.has(resourceKey(t))) m.set(resourceKey(t), t);
    return m;
  }

  /** The type whose apiVersion and kind an object declares. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.#types.find((t) => groupVersion(t) === apiVersion && t.kind === kind);
  }
}

function isEstablished(crd: JsonObject): boolean {
  const status = isObject(crd.status) ? crd.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return conditions.some((c) => isObject(c) && c.type === 'Established' && c.status === 'True');
}
