/**
 * Classifying failures into the contract's error classes (§5), and the
 * predicates the Checker shares.
 *
 * @module
 */
import {
  type ErrorClass,
  type Operation,
  ProviderError,
  TLS_VERIFY_CODES,
} from '@proxy-op/contract';
import { CredentialsError, KubernetesApiError, KubernetesConnectionError } from './errors.js';

/**
 * The ResourceQuota admission plugin's refusal: `<resource> "<name>" is
 * forbidden: exceeded quota: <quota>, requested: ..., used: ..., limited: ...`.
 */
const EXCEEDED_QUOTA = /is forbidden: exceeded quota: /;
/** The quota plugin before a new quota's usage is known (it calculates it within seconds). */
const QUOTA_STATUS_UNKNOWN = /is forbidden: status unknown for quota: /;
/** The namespace lifecycle plugin while a namespace is being deleted. */
const NAMESPACE_TERMINATING = /because it is being terminated$/;

/** True for the 403 of a ResourceQuota without room (as opposed to RBAC's and admission's 403s). */
export function isQuotaExceeded(err: unknown): boolean {
  return (
    KubernetesApiError.isInstance(err) && err.status === 403 && EXCEEDED_QUOTA.test(err.apiMessage)
  );
}

/** True for a TLS verification failure. */
export function isTlsFailure(err: unknown): boolean {
  return (
    KubernetesConnectionError.isInstance(err) &&
    err.errorCode !== undefined &&
    TLS_VERIFY_CODES.has(err.errorCode)
  );
}

/** The class of an API server answer by its status and, for 403, its message. */
function classifyStatus(err: KubernetesApiError): ErrorClass {
  const { status, apiMessage } = err;
  if (status === 404) return 'NotFound';
  if (status === 403) {
    if (EXCEEDED_QUOTA.test(apiMessage)) return 'QuotaExceeded';
    if (QUOTA_STATUS_UNKNOWN.test(apiMessage) || NAMESPACE_TERMINATING.test(apiMessage)) {
      return 'Transient';
    }
    // RBAC, PodSecurity, a webhook's denial, a quota that wants a field set: an admin fixes it.
    return 'Permanent';
  }
  if (status === 408 || status === 409 || status === 410 || status === 429) return 'Transient';
  if (status >= 400 && status < 500) return 'Permanent';
  return 'Transient';
}

/**
 * The provider's classify table: API answers by status (a 403 by its
 * message: a ResourceQuota refusal is QuotaExceeded, RBAC and admission
 * refusals Permanent), TLS verification failures Permanent, unusable
 * credentials Permanent and missing ones Transient, everything else
 * Transient. Inside Create a NotFound is made Transient by the shell.
 */
export function classify(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (KubernetesApiError.isInstance(err)) return classifyStatus(err);
  if (KubernetesConnectionError.isInstance(err))
    return isTlsFailure(err) ? 'Permanent' : 'Transient';
  if (CredentialsError.isInstance(err)) return err.missing ? 'Transient' : 'Permanent';
  return 'Transient';
}
