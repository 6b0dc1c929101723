/**
 * TLS verification failures, told apart from other connection failures:
 * the Checker reason `CertificateInvalid` of every provider that speaks
 * HTTPS to its backend, fixed by the admin (a CA file, a URL), not retried.
 *
 * @module
 */

/** Node's and OpenSSL's codes for a certificate that does not verify. */
export const TLS_VERIFY_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

/** The first error in `err`'s cause chain (five deep) whose `code` is a TLS verification failure. */
export function tlsVerifyError(err: unknown): Error | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== undefined && e !== null; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TLS_VERIFY_CODES.has(code)) return e as Error;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
