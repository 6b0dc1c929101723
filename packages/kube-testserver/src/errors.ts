/**
 * Failed requests as the real API server answers them: the `v1 Status`
 * body, `StatusError` with its HTTP code, and one builder per reason (not
 * found, already exists, conflict, invalid, ...), with field errors.
 *
 * @module
 */
import type { JsonObject } from './json.js';

/** One cause inside a Status's details, as `metav1.StatusCause`. */
export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** The body of a failed request: a `v1 Status` object, shaped as the real API server writes it. */
export interface Status {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: JsonObject;
  readonly status: 'Failure' | 'Success';
  readonly message?: string;
  readonly reason?: string;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly uid?: string;
    readonly causes?: readonly StatusCause[];
    readonly retryAfterSeconds?: number;
  };
  readonly code: number;
}

/** A group and resource, as `schema.GroupResource`. */
export interface GroupResource {
  readonly group: string;
  readonly resource: string;
}

/** `pods` or `leases.coordination.k8s.io`, as `GroupResource.String()`. */
export function qualified(gr: GroupResource): string {
  return gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`;
}

/** An error answered with a Status body and its HTTP code. */
export class StatusError extends Error {
  override readonly name = 'StatusError';
  readonly status: Status;
  /** Extra response headers (Retry-After, ...). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: Omit<Status, 'kind' | 'apiVersion' | 'metadata' | 'status'>, headers = {}) {
    super(status.message ?? status.reason ?? `status ${status.code}`);
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', ...status };
    this.headers = headers;
  }

  get code(): number {
    return this.status.code;
  }
}

function details(gr: GroupResource, name: string) {
  return {
    ...(name === '' ? {} : { name }),
    ...(gr.group === '' ? {} : { group: gr.group }),
    kind: gr.resource,
  };
}

export function notFound(gr: GroupResource, name: string): StatusError {
  return new StatusError({
    message: `${qualified(gr)} "${name}" not found`,
    reason: 'NotFound',
    details: details(gr, name),
    code: 404,
  });
}

export function alreadyExists(gr: GroupResource, name: string, beingDeleted = false): StatusError {
  const message = `${qualified(gr)} "${name}" already exists`;
  return new StatusError({
    message: beingDeleted ? `object is being deleted: ${message}` : message,
    reason: 'AlreadyExists',
    details: details(gr, name),
    code: 409,
  });
}

export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

export function conflict(
  gr: GroupResource,
  name: string,
  why = OPTIMISTIC_LOCK_MESSAGE,
): StatusError {
  return new StatusError({
    message: `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`,
    reason: 'Conflict',
    details: details(gr, name),
    code: 409,
  });
}

export function forbidden(gr: GroupResource, name: string, why: string): StatusError {
  const q = qualified(gr);
  const message =
    gr.resource === ''
      ? `forbidden: ${why}`
      : name === ''
        ? `${q} is forbidden: ${why}`
        : `${q} "${name}" is forbidden: ${why}`;
  return new StatusError({ message, reason: 'Forbidden', details: details(gr, name), code: 403 });
}

export function unauthorized(): StatusError {
  return new StatusError({ message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
}

export function badRequest(message: string): StatusError {
  return new StatusError({ message, reason: 'BadRequest', code: 400 });
}

export function expired(message: string): StatusError {
  return new StatusError({ message, reason: 'Expired', code: 410 });
}

export function methodNotSupported(gr: GroupResource, action: string): StatusError {
  return new StatusError({
    message: `${action} is not supported on resources of kind "${qualified(gr)}"`,
    reason: 'MethodNotAllowed',
    details: details(gr, ''),
    code: 405,
  });
}

export function unsupportedMediaType(accepted: readonly string[]): StatusError {
  return new StatusError({
    message: `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    reason: 'UnsupportedMediaType',
    code: 415,
  });
}

export function notAcceptable(message: string): StatusError {
  return new StatusError({ message, reason: 'NotAcceptable', code: 406 });
}

export function internalError(message: string): StatusError {
  return new StatusError({
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    details: { causes: [{ message }] },
    code: 500,
  });
}

export function tooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  return new StatusError(
    {
      message: `Too many requests: ${message}`,
      reason: 'TooManyRequests',
      details: { retryAfterSeconds },
      code: 429,
    },
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/** One field error, as `field.Error`: rendered `path: Type: detail`. */
export interface FieldError {
  /** `spec.port` */
  readonly field: string;
  /** `FieldValueInvalid`, `FieldValueRequired`, ... */
  readonly reason: string;
  /** The text after the field path, as `field.Error.ErrorBody()`. */
  readonly body: string;
}

export function fieldInvalid(field: string, value: unknown, detail: string): FieldError {
  return {
    field,
    reason: 'FieldValueInvalid',
    body: `Invalid value: ${goValue(value)}${detail === '' ? '' : `: ${detail}`}`,
  };
}

export function fieldRequired(field: string, detail = ''): FieldError {
  return {
    field,
    reason: 'FieldValueRequired',
    body: `Required value${detail === '' ? '' : `: ${detail}`}`,
  };
}

export function fieldNotSupported(
  field: string,
  value: unknown,
  supported: readonly unknown[],
): FieldError {
  return {
    field,
    reason: 'FieldValueNotSupported',
    body: `Unsupported value: ${goValue(value)}: supported values: ${supported.map((s) => goValue(s)).join(', ')}`,
  };
}

export function fieldForbidden(field: string, detail: string): FieldError {
  return { field, reason: 'FieldValueForbidden', body: `Forbidden: ${detail}` };
}

export function fieldTooLong(field: string, max: number): FieldError {
  return {
    field,
    reason: 'FieldValueTooLong',
    body: `Too long: may not be more than ${max} bytes`,
  };
}

export function fieldDuplicate(field: string, value: unknown): FieldError {
  return { field, reason: 'FieldValueDuplicate', body: `Duplicate value: ${goValue(value)}` };
}

/** A value as Go's `%#v`-ish rendering in field errors: strings quoted, objects as JSON-like. */
function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return Array.isArray(v) ? '[]interface {}{...}' : '"object"';
  return String(v);
}

/** 422 Invalid, as `apierrors.NewInvalid`: `Kind.group "name" is invalid: [errors]`. */
export function invalid(
  group: string,
  kind: string,
  name: string,
  errors: readonly FieldError[],
): StatusError {
  const gk = group === '' ? kind : `${kind}.${group}`;
  const rendered = errors.map((e) => (e.field === '' ? e.body : `${e.field}: ${e.body}`));
  const agg =
    rendered.length === 0 ? '' : rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  return new StatusError({
    message: agg === '' ? `${gk} "${name}" is invalid` : `${gk} "${name}" is invalid: ${agg}`,
    reason: 'Invalid',
    details: {
      ...(name === '' ? {} : { name }),
      ...(group === '' ? {} : { group }),
      ...(kind === '' ? {} : { kind }),
      causes: errors.map((e) => ({ reason: e.reason, message: e.body, field: e.field })),
    },
    code: 422,
  });
}
