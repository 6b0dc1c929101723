/**
 * The `gcp` provider's classify table (§5): Compute Engine answers, failed
 * operations and credentials failures to the contract's error classes.
 *
 * @module
 */
import { type ErrorClass, type Operation, ProviderError } from '@proxy-op/contract';
import { ComputeApiError, CredentialsError, OperationFailedError } from './errors.js';

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
 * error type (`operationErrorClass`); credentials that are missing
 * are Transient and unreadable ones Permanent; everything else (5xx, 409,
 * timeouts, connection failures) is Transient.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (OperationFailedError.isInstance(err)) return operationErrorClass(err.apiCode, err.httpStatus);
  if (CredentialsError.isInstance(err)) return err.kind === 'invalid' ? 'Permanent' : 'Transient';
  if (ComputeApiError.isInstance(err)) {
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
