/**
 * A resource type: what the server serves at one group/version (names and
 * scope for discovery, columns for `kubectl get`, the strategy hooks of
 * create and update), its keys, the standard verbs, and the table columns
 * every type shares.
 *
 * @module
 */
import { age } from './duration.js';
import type { FieldError } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import type { ScaleSubresource } from './scale.js';
import type { Schema } from './schema.js';

/** One column of a `meta.k8s.io/v1 Table`, with the function that fills its cell. */
export interface Column {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
  cell(obj: JsonObject, now: number): JsonValue;
}

/** What a request wrote into an object: the server's hooks see it. */
export interface WriteContext {
  readonly now: Date;
  /** `Strict`, `Warn` or `Ignore`: what unknown fields cost. */
  readonly fieldValidation: 'Strict' | 'Warn' | 'Ignore';
  /** Warnings for the `Warning` response header. */
  readonly warnings: string[];
}

/**
 * A resource the server serves at one group/version: its names and scope
 * for discovery, its columns for `kubectl get`, and the strategy hooks
 * that give it the real server's create/update behaviour.
 */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural, lower case: `pods`. */
  readonly resource: string;
  readonly kind: string;
  readonly listKind: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly verbs: readonly string[];
  /** Whether `/status` is served, where only status may change. */
  readonly statusSubresource: boolean;
  /** The scale subresource of a custom resource version (`/scale`), when its CRD declares one. */
  readonly scale?: ScaleSubresource;
  /**
   * For a custom resource: the replicas path (`.spec.replicas`) of every
   * version of its CRD by apiVersion (`null` for a version without scale),
   * which a write to `/scale` takes out of every managedFields entry.
   */
  readonly replicasPaths?: Readonly<Record<string, string | null>>;
  /** Served from a CustomResourceDefinition: no strategic merge patch. */
  readonly custom: boolean;
  /** Whether `metadata.generation` is kept (bumped on non-metadata changes). */
  readonly generation: boolean;
  /** Whether an immediate DELETE answers the object (pods, services) rather than a Status. */
  readonly deleteReturnsObject: boolean;
  readonly columns: readonly Column[];
  /**
   * Merge keys of lists, by field path (`spec.containers` → `name`), for
   * strategic merge patch and server-side apply. Lists not named here are
   * atomic.
   */
  readonly listMapKeys: Readonly<Record<string, readonly string[]>>;
  /** The structural schema of a custom resource version (published in OpenAPI). */
  readonly schema?: Schema;
  /**
   * Checks and normalises a decoded body (wire formats such as MicroTime;
   * pruning of undeclared fields). Returns the paths of the fields it
   * dropped, for strict field validation; throws a StatusError (400) for a
   * body the real server cannot decode.
   */
  decode?(obj: JsonObject, ctx: WriteContext): string[];
  /** Sets defaults (as the real server's defaulting, before validation). */
  defaults?(obj: JsonObject, ctx: WriteContext): void;
  /** Fills server-owned fields on create (status, allocations). */
  prepareCreate?(obj: JsonObject, ctx: WriteContext): void;
  /** Validation errors, as the real server's strategy `Validate`/`ValidateUpdate`. */
  validate?(obj: JsonObject, old: JsonObject | undefined): FieldError[];
}

/** `group/version`, or `version` for the core group. */
export function groupVersion(t: { group: string; version: string }): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

/** The storage key of a resource: `group/resource` (every version shares it). */
export function resourceKey(t: { group: string; resource: string }): string {
  return `${t.group}/${t.resource}`;
}

export const STANDARD_VERBS = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
] as const;

const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const CREATED_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

/** The Name column every table starts with. */
export const NAME_COLUMN: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: NAME_DESCRIPTION,
  priority: 0,
  cell: (o) => {
    const m = o.metadata;
    return typeof m === 'object' && m !== null && !Array.isArray(m) ? (m.name ?? '') : '';
  },
};

/** The Age column (creationTimestamp as a human duration). */
export const AGE_COLUMN: Column = {
  name: 'Age',
  type: 'string',
  format: '',
  description: CREATED_DESCRIPTION,
  priority: 0,
  cell: (o, now) => {
    const m = o.metadata;
    return age(
      typeof m === 'object' && m !== null && !Array.isArray(m) ? m.creationTimestamp : undefined,
      now,
    );
  },
};

/** A column whose cell is computed by `cell`. */
export function column(
  name: string,
  cell: (o: JsonObject, now: number) => JsonValue,
  opts: { type?: string; priority?: number; description?: string } = {},
): Column {
  return {
    name,
    type: opts.type ?? 'string',
    format: '',
    description: opts.description ?? name,
    priority: opts.priority ?? 0,
    cell,
  };
}
