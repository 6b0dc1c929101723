/**
 * How a built-in resource type is declared: its names, verbs, columns and
 * the hooks (decode, defaults, validation) the generic registry runs.
 *
 * @module
 */
import type { JsonObject } from './json.js';
import { type Column, type ResourceType, STANDARD_VERBS } from './resource-type.js';
import { dns1123Subdomain, validateObjectMeta } from './validation.js';

/** The object-meta checks of a type whose names are DNS subdomains. */
export function subdomainMeta(namespaced: boolean) {
  return (obj: JsonObject) => validateObjectMeta(obj, namespaced, dns1123Subdomain);
}

/** What a built-in resource type is made from. */
export interface BuiltinSpec {
  group: string;
  version: string;
  resource: string;
  kind: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  verbs?: readonly string[];
  statusSubresource?: boolean;
  deleteReturnsObject?: boolean;
  columns: Column[];
  listMapKeys?: Record<string, string[]>;
  decode?: ResourceType['decode'];
  defaults?: ResourceType['defaults'];
  prepareCreate?: ResourceType['prepareCreate'];
  validate?: ResourceType['validate'];
  /** Whether `metadata.generation` is kept (default false). */
  generation?: boolean;
}

/** A built-in resource type. */
export function builtin(s: BuiltinSpec): ResourceType {
  return {
    group: s.group,
    version: s.version,
    resource: s.resource,
    kind: s.kind,
    listKind: `${s.kind}List`,
    singular: s.singular,
    namespaced: s.namespaced,
    shortNames: s.shortNames ?? [],
    categories: s.categories ?? [],
    verbs: s.verbs ?? STANDARD_VERBS,
    statusSubresource: s.statusSubresource ?? false,
    custom: false,
    generation: s.generation ?? false,
    deleteReturnsObject: s.deleteReturnsObject ?? false,
    columns: s.columns,
    listMapKeys: { 'metadata.ownerReferences': ['uid'], ...(s.listMapKeys ?? {}) },
    ...(s.decode === undefined ? {} : { decode: s.decode }),
    ...(s.defaults === undefined ? {} : { defaults: s.defaults }),
    ...(s.prepareCreate === undefined ? {} : { prepareCreate: s.prepareCreate }),
    validate: s.validate ?? subdomainMeta(s.namespaced),
  };
}
