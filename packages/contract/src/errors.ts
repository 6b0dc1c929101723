/**
 * The four classes of provider error, what the operator does with each, and
 * the helpers that create and recognise them.
 *
 * @module
 */

/** How the caller should react to a failure. */
export type ErrorClass = 'NotFound' | 'Transient' | 'Permanent' | 'QuotaExceeded';

/** The error classes, as values. */
export const ErrorClass = {
  /** The instance does not exist (any more). Never returned by `create`. */
  NotFound: 'NotFound',
  /** Worth retrying with backoff: timeouts, cancellation, 5xx, locks. The default. */
  Transient: 'Transient',
  /** Retrying the same request cannot succeed: bad input, missing privilege, foreign instance. */
  Permanent: 'Permanent',
  /** The backend refused for lack of quota or capacity; retry with a longer backoff. */
  QuotaExceeded: 'QuotaExceeded',
} as const satisfies Record<ErrorClass, ErrorClass>;

/**
 * Stable machine-readable codes: one per class, plus `MalformedAnswer`, the
 * Transient code of a backend answer the provider could not read (a list
 * that is `null`, a 200 that is not JSON). They never change within a major
 * version.
 */
export const ErrorCode = {
  NotFound: 'PROVIDER_NOT_FOUND',
  Transient: 'PROVIDER_TRANSIENT',
  Permanent: 'PROVIDER_PERMANENT',
  QuotaExceeded: 'PROVIDER_QUOTA_EXCEEDED',
  MalformedAnswer: 'PROVIDER_MALFORMED_ANSWER',
} as const satisfies Record<ErrorClass | 'MalformedAnswer', string>;

/** One of the values of {@link (ErrorCode:variable)}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The operation that failed: one of the four methods, the Checker, or a
 * provider-specific step name.
 */
export type Operation = 'create' | 'get' | 'delete' | 'list' | 'check' | (string & {});

const BRAND = Symbol.for('@proxy-op/contract.ProviderError');
const ERROR_CLASSES: ReadonlySet<string> = new Set(Object.keys(ErrorClass));

/** What every {@link ProviderError} constructor takes. */
export interface ProviderErrorOptions {
  /** The provider's configured name (never a hard-coded type). */
  readonly provider: string;
  /** The operation that failed. */
  readonly op: Operation;
  /** A message for people. Never holds credentials, cloud-init or request headers. */
  readonly message: string;
  /** The underlying error, kept for logs and for `classify`. */
  readonly cause?: unknown;
}

/**
 * The one error type that leaves a provider. Check for it with
 * {@link ProviderError.isInstance} (works across two installed copies of this
 * package) rather than `instanceof`.
 */
export class ProviderError extends Error {
  /** The class of failure; decides the operator's reaction. */
  readonly errorClass: ErrorClass;
  /** Stable code for {@link ProviderError.errorClass}. */
  readonly code: ErrorCode;
  /** The configured provider name. */
  readonly provider: string;
  /** The operation that failed. */
  readonly op: Operation;

  constructor(errorClass: ErrorClass, options: ProviderErrorOptions) {
    if (!ERROR_CLASSES.has(errorClass)) {
      throw new TypeError(`ProviderError: unknown error class ${String(errorClass)}`);
    }
    if (options === null || typeof options !== 'object') {
      throw new TypeError('ProviderError: options must be an object');
    }
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.errorClass = errorClass;
    this.code = ErrorCode[errorClass];
    this.provider = options.provider;
    this.op = options.op;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** Always `ProviderError`. */
  override get name(): string {
    return 'ProviderError';
  }

  /** True for a ProviderError from any copy of this package. */
  static isInstance(value: unknown): value is ProviderError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[BRAND] === true &&
      ERROR_CLASSES.has((value as { errorClass?: unknown }).errorClass as string)
    );
  }

  /** A plain object for structured logs: no stack, no cause chain. */
  toJSON(): Record<string, string> {
    return {
      name: this.name,
      code: this.code,
      errorClass: this.errorClass,
      provider: this.provider,
      op: this.op,
      message: this.message,
    };
  }
}

/** The instance does not exist. */
export class NotFoundError extends ProviderError {
  constructor(options: ProviderErrorOptions) {
    super('NotFound', options);
  }
}

/** Retry with backoff. */
export class TransientError extends ProviderError {
  constructor(options: ProviderErrorOptions) {
    super('Transient', options);
  }
}

/**
 * A backend answer the provider could not read: Transient, with code
 * `PROVIDER_MALFORMED_ANSWER` and the parse failure as `cause`. The
 * operation shell turns any `TypeError`, `SyntaxError` or `RangeError`
 * raised inside an operation into one.
 */
export class MalformedAnswerError extends TransientError {
  constructor(options: ProviderErrorOptions) {
    super(options);
    (this as { code: ErrorCode }).code = ErrorCode.MalformedAnswer;
  }
}

/** Retrying cannot help until the input or the backend is changed by a person. */
export class PermanentError extends ProviderError {
  constructor(options: ProviderErrorOptions) {
    super('Permanent', options);
  }
}

/** Out of quota or capacity. */
export class QuotaExceededError extends ProviderError {
  constructor(options: ProviderErrorOptions) {
    super('QuotaExceeded', options);
  }
}

const CONSTRUCTORS = {
  NotFound: NotFoundError,
  Transient: TransientError,
  Permanent: PermanentError,
  QuotaExceeded: QuotaExceededError,
} as const;

/** Builds the error subclass for `errorClass`. */
export function providerError(
  errorClass: ErrorClass,
  options: ProviderErrorOptions,
): ProviderError {
  const Ctor = CONSTRUCTORS[errorClass];
  if (Ctor === undefined) throw new TypeError(`unknown error class ${String(errorClass)}`);
  return new Ctor(options);
}

/** Shorthand for a {@link PermanentError}. */
export function permanent(
  provider: string,
  op: Operation,
  message: string,
  cause?: unknown,
): PermanentError {
  return new PermanentError({ provider, op, message, cause });
}

/** Shorthand for a {@link TransientError}. */
export function transient(
  provider: string,
  op: Operation,
  message: string,
  cause?: unknown,
): TransientError {
  return new TransientError({ provider, op, message, cause });
}

/** Shorthand for a {@link NotFoundError}. */
export function notFound(
  provider: string,
  op: Operation,
  message: string,
  cause?: unknown,
): NotFoundError {
  return new NotFoundError({ provider, op, message, cause });
}

/** Shorthand for a {@link QuotaExceededError}. */
export function quotaExceeded(
  provider: string,
  op: Operation,
  message: string,
  cause?: unknown,
): QuotaExceededError {
  return new QuotaExceededError({ provider, op, message, cause });
}

/**
 * The class of any thrown value: a ProviderError's own class, and Transient
 * for everything else (the contract's default).
 */
export function errorClassOf(err: unknown): ErrorClass {
  return ProviderError.isInstance(err) ? err.errorClass : 'Transient';
}

/** True when `err` is a ProviderError of class NotFound. */
export function isNotFound(err: unknown): err is ProviderError {
  return ProviderError.isInstance(err) && err.errorClass === 'NotFound';
}

/** True when `err` is a ProviderError of class Transient. */
export function isTransient(err: unknown): err is ProviderError {
  return ProviderError.isInstance(err) && err.errorClass === 'Transient';
}

/** True when `err` is a ProviderError of class Permanent. */
export function isPermanent(err: unknown): err is ProviderError {
  return ProviderError.isInstance(err) && err.errorClass === 'Permanent';
}

/** True when `err` is a ProviderError of class QuotaExceeded. */
export function isQuotaExceeded(err: unknown): err is ProviderError {
  return ProviderError.isInstance(err) && err.errorClass === 'QuotaExceeded';
}

/**
 * Turns any thrown value into a ProviderError for `provider` and `op`.
 * A ProviderError passes through unchanged; anything else is classified by
 * `classify` (Transient when omitted). Inside `create` a NotFound from the
 * backend (something vanished between steps) becomes Transient, because
 * `create` never answers NotFound.
 */
export function toProviderError(
  provider: string,
  op: Operation,
  err: unknown,
  classify?: (op: Operation, err: unknown) => ErrorClass,
): ProviderError {
  if (ProviderError.isInstance(err)) {
    if (op === 'create' && err.errorClass === 'NotFound') {
      return new TransientError({ provider, op, message: err.message, cause: err });
    }
    return err;
  }
  let errorClass = classify ? classify(op, err) : 'Transient';
  if (op === 'create' && errorClass === 'NotFound') errorClass = 'Transient';
  return providerError(errorClass, { provider, op, message: describeCause(err), cause: err });
}

function describeCause(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  return 'unknown failure';
}
