/**
 * The `gcp` provider's errors and its classify table: Compute Engine
 * answers to the contract's error classes.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import type { OperationView } from './seam.js';

/** What the API answered to a failed call: HTTP status, gRPC code, `errors[].reason`. */
export interface ComputeApiErrorOptions {
  /** The API's message (`The resource '...' was not found`). */
  readonly message: string;
  /** The HTTP status, when an answer arrived. */
  readonly httpStatus?: number | undefined;
  /** The gRPC code the client mapped it to (14 UNAVAILABLE for a transport failure). */
  readonly grpcCode?: number | undefined;
  /** The `reason` of each entry of the body's `errors` list (`notFound`, `quotaExceeded`, ...). */
  readonly reasons?: readonly string[] | undefined;
  /** The body's `status` (`PERMISSION_DENIED`, ...). */
  readonly status?: string | undefined;
}

/**
 * A failed Compute Engine call. The adapter builds it from the client's
 * error and keeps nothing else: the client's own error holds the request
 * (with the user-data) and headers, so it is not kept as the cause.
 */
export class ComputeApiError extends Error {
  readonly httpStatus: number | undefined;
  readonly grpcCode: number | undefined;
  readonly reasons: readonly string[];
  readonly status: string | undefined;
  constructor(o: ComputeApiErrorOptions) {
    super(o.message);
    this.httpStatus = o.httpStatus;
    this.grpcCode = o.grpcCode;
    this.reasons = o.reasons ?? [];
    this.status = o.status;
  }
  override get name(): string {
    return 'ComputeApiError';
  }
}

/** An operation the API accepted that ended with errors (a quota, a missing image). */
export class OperationFailedError extends Error {
  readonly operation: string;
  /** The first error's type (`QUOTA_EXCEEDED`). */
  readonly code: string;
  readonly httpStatus: number | undefined;
  constructor(what: string, op: OperationView) {
    const first = op.errors[0];
    const text = op.errors.map((e) => `${e.code}: ${e.message}`).join('; ');
    super(`${what} failed (operation ${op.name}): ${text}`);
    this.operation = op.name;
    this.code = first?.code ?? 'UNKNOWN';
    this.httpStatus = op.httpErrorStatusCode;
  }
  override get name(): string {
    return 'OperationFailedError';
  }
}

/** The credentials could not be read: no Application Default Credentials, a bad key file. */
export class CredentialsError extends Error {
  /** `missing` (none found: Transient, the Secret may be mounted later) or `invalid` (Permanent). */
  readonly kind: 'missing' | 'invalid';
  constructor(kind: 'missing' | 'invalid', message: string) {
    super(message);
    this.kind = kind;
  }
  override get name(): string {
    return 'CredentialsError';
  }
}

const QUOTA_REASONS = new Set(['quotaExceeded', 'rateLimitExceeded']);
const QUOTA_OPERATION_CODES = new Set([
  'QUOTA_EXCEEDED',
  'ZONE_RESOURCE_POOL_EXHAUSTED',
  'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS',
  'RESOURCE_POOL_EXHAUSTED',
]);
const TRANSIENT_OPERATION_CODES = new Set([
  'RESOURCE_NOT_READY',
  'RESOURCE_OPERATION_RATE_EXCEEDED',
  'INTERNAL_ERROR',
  'UNAVAILABLE',
  'TIMEOUT',
]);

/**
 * The class of an operation that failed after the API accepted it: quota
 * and zone capacity are QuotaExceeded; an error the API calls temporary is
 * Transient; any other error with a 4xx status (a missing image, an
 * invalid field) is Permanent; the rest Transient.
 */
export function operationErrorClass(code: string, httpStatus: number | undefined): ErrorClass {
  if (QUOTA_OPERATION_CODES.has(code)) return 'QuotaExceeded';
  if (TRANSIENT_OPERATION_CODES.has(code)) return 'Transient';
  if (httpStatus === 429) return 'QuotaExceeded';
  if (httpStatus !== undefined && httpStatus >= 400 && httpStatus < 500 && httpStatus !== 409) {
    return 'Permanent';
  }
  return 'Transient';
}

/**
 * The `gcp` provider's classify table: 404 is NotFound; 429, and 403 with
 * the reason `quotaExceeded` or `rateLimitExceeded`, are QuotaExceeded;
 * 400, 401 and every other 403 are Permanent; a failed operation by its
 * error type ({@link operationErrorClass}); credentials that are missing
 * are Transient and unreadable ones Permanent; everything else (5xx, 409,
 * timeouts, connection failures) is Transient.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (err instanceof OperationFailedError) return operationErrorClass(err.code, err.httpStatus);
  if (err instanceof CredentialsError) return err.kind === 'invalid' ? 'Permanent' : 'Transient';
  if (err instanceof ComputeApiError) {
    switch (err.httpStatus) {
      case 404:
        return 'NotFound';
      case 429:
        return 'QuotaExceeded';
      case 403:
        return err.reasons.some((r) => QUOTA_REASONS.has(r)) ? 'QuotaExceeded' : 'Permanent';
      case 400:
      case 401:
        return 'Permanent';
      default:
        return 'Transient';
    }
  }
  return 'Transient';
}

/** Safe facts about a failed call for its log line: status, code, reasons, never the message. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (err instanceof ComputeApiError) {
    const out: Record<string, string | number> = { error: err.name };
    if (err.httpStatus !== undefined) out.httpStatus = err.httpStatus;
    if (err.grpcCode !== undefined) out.grpcCode = err.grpcCode;
    if (err.reasons.length > 0) out.reasons = err.reasons.join(',');
    if (err.status !== undefined) out.status = err.status;
    return out;
  }
  if (err instanceof OperationFailedError) {
    return { error: err.name, operation: err.operation, code: err.code };
  }
  if (err instanceof Error) return { error: err.name };
  return { error: typeof err };
}
