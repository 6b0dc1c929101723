/**
 * The `hetzner` provider's classify table (§5): error answers of the
 * Hetzner Cloud API by their `error.code`, and failures with no answer, to
 * the contract's error classes.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import { HetznerApiError } from './errors.js';

/** API error codes that leave the request to be fixed: Permanent. */
const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'invalid_input',
  'json_error',
  'unauthorized',
  'token_readonly',
  'forbidden',
  'uniqueness_error',
  'protected',
  'unsupported_error',
  'deprecated_api_endpoint',
  'method_not_allowed',
  'invalid_server_type',
]);

/** API error codes of a limit or of capacity: QuotaExceeded. */
const QUOTA_CODES: ReadonlySet<string> = new Set([
  'resource_limit_exceeded',
  'resource_unavailable',
  'placement_error',
]);

/** API error codes that pass: Transient. */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'rate_limit_exceeded',
  'locked',
  'conflict',
  'server_error',
  'service_error',
  'unavailable',
  'timeout',
  'maintenance',
  'resource_in_use',
  'robot_unavailable',
]);

/** The class of an error answer by its API code, else by its HTTP status. */
export function apiErrorClass(apiCode: string, httpStatus: number): ErrorClass {
  if (apiCode === 'not_found') return 'NotFound';
  if (QUOTA_CODES.has(apiCode)) return 'QuotaExceeded';
  if (PERMANENT_CODES.has(apiCode)) return 'Permanent';
  if (TRANSIENT_CODES.has(apiCode)) return 'Transient';
  if (httpStatus === 404) return 'NotFound';
  if (httpStatus === 401 || httpStatus === 403 || httpStatus === 400 || httpStatus === 422) {
    return 'Permanent';
  }
  return 'Transient';
}

/**
 * The `hetzner` provider's classify table: `not_found` is NotFound;
 * `resource_limit_exceeded`, `resource_unavailable` and `placement_error`
 * are QuotaExceeded; `invalid_input`, `uniqueness_error`, `unauthorized`,
 * `token_readonly`, `forbidden` and the other refusals of the request are
 * Permanent; `rate_limit_exceeded`, `locked`, `conflict`, server errors
 * and maintenance are Transient; an unknown code goes by its status (404
 * NotFound, 400, 401, 403 and 422 Permanent, the rest Transient). A token
 * file that cannot be read, and a request with no answer, are Transient.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (HetznerApiError.isInstance(err)) return apiErrorClass(err.apiCode, err.httpStatus);
  // TokenError, TransportError and anything unknown.
  return 'Transient';
}
