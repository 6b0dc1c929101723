/**
 * The low-level failures of the Kubernetes client, found as a
 * `ProviderError`'s `cause`. Each is branded: `KubernetesApiError.isInstance`
 * works across two installed copies of this package.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';

/** What a `v1 Status` says about the object it concerns. */
export interface StatusDetails {
  /** The name of the object. */
  readonly name?: string | undefined;
  /** The API group of its kind (empty for the core group). */
  readonly group?: string | undefined;
  /** Its kind, as the API server names it (`pods`, `Pod`). */
  readonly kind?: string | undefined;
}

/** An answer of the API server with a failure status (a `v1 Status` body, when it sent one). */
export class KubernetesApiError extends BackendError {
  /** `@proxy-op/provider-kubernetes.KubernetesApiError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-kubernetes.KubernetesApiError';
  /** Always `KUBERNETES_API_ERROR`. */
  readonly code = 'KUBERNETES_API_ERROR';
  /** The HTTP status. */
  readonly status: number;
  /** The Status `reason` (`NotFound`, `Forbidden`, `AlreadyExists`, ...); empty without a Status body. */
  readonly reason: string;
  /** The Status `message`, as the API server wrote it. */
  readonly apiMessage: string;
  /** The Status `details`: the object the failure concerns; empty without a Status body. */
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
}

/** The API server could not be reached: a refused or cut connection, or TLS that does not verify. */
export class KubernetesConnectionError extends BackendError {
  /** `@proxy-op/provider-kubernetes.KubernetesConnectionError`: the key of the class's brand. */
  static override readonly brand: string =
    '@proxy-op/provider-kubernetes.KubernetesConnectionError';
  /** Always `KUBERNETES_UNREACHABLE`. */
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
}

/** The credentials could not be read: no kubeconfig, no token file, not in a cluster. */
export class CredentialsError extends BackendError {
  /** `@proxy-op/provider-kubernetes.CredentialsError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-kubernetes.CredentialsError';
  /** Always `KUBERNETES_CREDENTIALS`. */
  readonly code = 'KUBERNETES_CREDENTIALS';
  /** True when a file is missing (it may appear: a Secret not mounted yet); false when it cannot be used. */
  readonly missing: boolean;
  constructor(message: string, missing: boolean, cause?: unknown) {
    super(message, { cause });
    this.missing = missing;
  }
}
