/**
 * The `gcp` provider's backend errors: what the adapter throws for a failed
 * Compute Engine call, a failed operation or unusable credentials. Each is
 * branded (`isInstance` works across two installed copies of the package),
 * has a stable `code`, and is the `cause` of the ProviderError a user sees.
 * Also the safe facts of a failure for a log line.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';
import type { OperationView } from './answers.js';

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
export class ComputeApiError extends BackendError {
  /** `@proxy-op/provider-gcp.ComputeApiError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-gcp.ComputeApiError';
  /** Always `GCP_COMPUTE_API`. */
  readonly code = 'GCP_COMPUTE_API';
  /** The HTTP status of the answer, when there was one. */
  readonly httpStatus: number | undefined;
  /** The gRPC status code, when the client gave one. */
  readonly grpcCode: number | undefined;
  /**
   * The `reason` of each entry of the body's `errors` list (`notFound`, `quotaExceeded`, ...);
   * empty when none.
   */
  readonly reasons: readonly string[];
  /** The body's `status` (`PERMISSION_DENIED`, ...), when it has one. */
  readonly status: string | undefined;
  constructor(o: ComputeApiErrorOptions) {
    super(o.message);
    this.httpStatus = o.httpStatus;
    this.grpcCode = o.grpcCode;
    this.reasons = o.reasons ?? [];
    this.status = o.status;
  }
}

/** An operation the API accepted that ended with errors (a quota, a missing image). */
export class OperationFailedError extends BackendError {
  /** `@proxy-op/provider-gcp.OperationFailedError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-gcp.OperationFailedError';
  /** Always `GCP_OPERATION_FAILED`. */
  readonly code = 'GCP_OPERATION_FAILED';
  /** The operation's name. */
  readonly operation: string;
  /** The first error's type, as the API writes it (`QUOTA_EXCEEDED`). */
  readonly apiCode: string;
  /** The operation's HTTP error status (403 for quota), when it has one. */
  readonly httpStatus: number | undefined;
  constructor(what: string, op: OperationView) {
    const text = op.errors.map((e) => `${e.code}: ${e.message}`).join('; ');
    super(`${what} failed (operation ${op.name}): ${text}`);
    this.operation = op.name;
    this.apiCode = op.errors[0]?.code ?? 'UNKNOWN';
    this.httpStatus = op.httpErrorStatusCode;
  }
}

/** The credentials could not be read: no Application Default Credentials, a bad key file. */
export class CredentialsError extends BackendError {
  /** `@proxy-op/provider-gcp.CredentialsError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-gcp.CredentialsError';
  /** Always `GCP_CREDENTIALS`. */
  readonly code = 'GCP_CREDENTIALS';
  /** `missing` (none found: Transient, the Secret may be mounted later) or `invalid` (Permanent). */
  readonly kind: 'missing' | 'invalid';
  constructor(kind: 'missing' | 'invalid', message: string) {
    super(message);
    this.kind = kind;
  }
}

/** Safe facts about a failed call for its log line: status, code, reasons, never the message. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (ComputeApiError.isInstance(err)) {
    const out: Record<string, string | number> = { error: err.name };
    if (err.httpStatus !== undefined) out.httpStatus = err.httpStatus;
    if (err.grpcCode !== undefined) out.grpcCode = err.grpcCode;
    if (err.reasons.length > 0) out.reasons = err.reasons.join(',');
    if (err.status !== undefined) out.status = err.status;
    return out;
  }
  if (OperationFailedError.isInstance(err)) {
    return { error: err.name, operation: err.operation, code: err.apiCode };
  }
  if (err instanceof Error) return { error: err.name };
  return { error: typeof err };
}
