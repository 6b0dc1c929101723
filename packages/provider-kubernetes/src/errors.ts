/**
 * The low-level failures of the Kubernetes client, found as a
 * `ProviderError`'s `cause`.
 *
 * @module
 */

/** What a `v1 Status` says about the object it concerns. */
export interface StatusDetails {
  readonly name?: string | undefined;
  readonly group?: string | undefined;
  readonly kind?: string | undefined;
}

/** An answer of the API server with a failure status (a `v1 Status` body, when it sent one). */
export class KubernetesApiError extends Error {
  readonly code = 'KUBERNETES_API_ERROR';
  /** The HTTP status. */
  readonly status: number;
  /** The Status `reason` (`NotFound`, `Forbidden`, `AlreadyExists`, ...); empty without a Status body. */
  readonly reason: string;
  /** The Status `message`, as the API server wrote it. */
  readonly apiMessage: string;
  readonly details: StatusDetails;
  constructor(status: number, reason: string, apiMessage: string, details: StatusDetails = {}) {
    super(
      apiMessage === ''
        ? `the API server answered ${status}${reason === '' ? '' : ` ${reason}`}`
        : `${apiMessage} (${status}${reason === '' ? '' : ` ${reason}`})`,
    );
    this.status = status;
    this.reason = reason;
    this.apiMessage = apiMessage;
    this.details = details;
  }
  override get name(): string {
    return 'KubernetesApiError';
  }
}

/** The API server could not be reached: a refused or cut connection, or TLS that does not verify. */
export class KubernetesConnectionError extends Error {
  readonly code = 'KUBERNETES_UNREACHABLE';
  /** The system or TLS error code (`ECONNREFUSED`, `DEPTH_ZERO_SELF_SIGNED_CERT`, ...). */
  readonly errorCode: string | undefined;
  constructor(server: string, errorCode: string | undefined, cause: unknown) {
    super(
      `the API server at ${server} cannot be reached${errorCode === undefined ? '' : ` (${errorCode})`}`,
      {
        cause,
      },
    );
    this.errorCode = errorCode;
  }
  override get name(): string {
    return 'KubernetesConnectionError';
  }
}

/** A request that did not get its answer within the per-call budget. */
export class KubernetesTimeoutError extends Error {
  readonly code = 'KUBERNETES_REQUEST_TIMEOUT';
  constructor(what: string, budgetMs: number) {
    super(`${what}: the API server did not answer within ${budgetMs / 1000} s`);
  }
  override get name(): string {
    return 'KubernetesTimeoutError';
  }
}

/** The credentials could not be read: no kubeconfig, no token file, not in a cluster. */
export class CredentialsError extends Error {
  readonly code = 'KUBERNETES_CREDENTIALS';
  /** True when a file is missing (it may appear: a Secret not mounted yet); false when it cannot be used. */
  readonly missing: boolean;
  constructor(message: string, missing: boolean, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.missing = missing;
  }
  override get name(): string {
    return 'CredentialsError';
  }
}
