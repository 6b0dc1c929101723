/**
 * The `aws` provider's backend errors: what the adapter throws for a failed
 * EC2 call or unusable credentials. Each is branded (`isInstance` works
 * across two installed copies of the package), has a stable `code`, and is
 * the `cause` of the ProviderError a user sees. Also the safe facts of a
 * failure for a log line.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';

/** What EC2 answered to a failed call, or why no answer came. */
export interface Ec2ApiErrorOptions {
  /** The EC2 action (`RunInstances`). */
  readonly action: string;
  /** EC2's error code (`InvalidAMIID.NotFound`), or the transport's (`ECONNREFUSED`) when no answer came. */
  readonly ec2Code: string;
  /** EC2's message, with an encoded authorization message taken out. */
  readonly message: string;
  /** The HTTP status, when an answer arrived. */
  readonly httpStatus?: number | undefined;
  /** The request ID EC2 gave the call, when it gave one. */
  readonly requestId?: string | undefined;
  /** The encoded authorization failure message of an UnauthorizedOperation, kept apart. */
  readonly encodedMessage?: string | undefined;
}

/**
 * A failed EC2 call. The adapter builds it from the SDK's error and keeps
 * nothing else of it (the SDK's error holds the raw answer).
 */
export class Ec2ApiError extends BackendError {
  /** `@proxy-op/provider-aws.Ec2ApiError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-aws.Ec2ApiError';
  /** Always `AWS_EC2_API`. */
  readonly code = 'AWS_EC2_API';
  /** The EC2 action that failed (`RunInstances`). */
  readonly action: string;
  /** EC2's error code (`InvalidAMIID.NotFound`), or the transport's (`ECONNREFUSED`). */
  readonly ec2Code: string;
  /** The HTTP status of the answer; undefined when none came. */
  readonly httpStatus: number | undefined;
  /** EC2's request ID, for a support case. */
  readonly requestId: string | undefined;
  /**
   * The encoded authorization failure message of an UnauthorizedOperation
   * (decode it with `aws sts decode-authorization-message`). It is kept out
   * of the message, of `toJSON` and of every log line: its decoded form
   * holds the request's context. Not enumerable.
   */
  declare readonly encodedMessage: string | undefined;
  constructor(o: Ec2ApiErrorOptions) {
    super(o.message);
    this.action = o.action;
    this.ec2Code = o.ec2Code;
    this.httpStatus = o.httpStatus;
    this.requestId = o.requestId;
    Object.defineProperty(this, 'encodedMessage', { value: o.encodedMessage, enumerable: false });
  }
}

/** The credentials could not be read: none in the default chain, a credentials file that is missing or unreadable. */
export class CredentialsError extends BackendError {
  /** `@proxy-op/provider-aws.CredentialsError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-aws.CredentialsError';
  /** Always `AWS_CREDENTIALS`. */
  readonly code = 'AWS_CREDENTIALS';
  /** `missing` (none found: Transient, the Secret may be mounted later) or `invalid` (Permanent). */
  readonly kind: 'missing' | 'invalid';
  constructor(kind: 'missing' | 'invalid', message: string) {
    super(message);
    this.kind = kind;
  }
}

/** Safe facts about a failed call for its log line: action, code, status, request ID, never the message. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (Ec2ApiError.isInstance(err)) {
    const out: Record<string, string | number> = {
      error: err.name,
      action: err.action,
      ec2Code: err.ec2Code,
    };
    if (err.httpStatus !== undefined) out.httpStatus = err.httpStatus;
    if (err.requestId !== undefined) out.requestId = err.requestId;
    return out;
  }
  if (CredentialsError.isInstance(err)) return { error: err.name, kind: err.kind };
  if (err instanceof Error) return { error: err.name };
  return { error: typeof err };
}
