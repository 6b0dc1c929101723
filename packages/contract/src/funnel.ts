/**
 * The error funnel of the operation shell: what turns anything an
 * operation throws into what leaves the provider, and the rules it applies
 * (a cancelled call, a malformed answer, a call past its budget, a
 * backend failure for the module's `classify`, secret redaction).
 *
 * @module
 */
import { abortedError } from './abort.js';
import { BudgetError } from './budget.js';
import {
  type ErrorClass,
  MalformedAnswerError,
  type Operation,
  ProviderError,
  type ProviderErrorOptions,
  providerError,
} from './errors.js';
import type { SecretSet } from './secrets.js';

/** Options of {@link toOperationError}. */
export interface FunnelOptions {
  /** The configured provider name, put on the error. */
  readonly provider: string;
  /** The operation that failed, put on the error. */
  readonly op: Operation;
  /** The caller's signal: a rejection after it fired is the Transient cancellation error. */
  readonly signal?: AbortSignal | undefined;
  /** Classifies what is not already a ProviderError; Transient when omitted. */
  readonly classify?: ((op: Operation, err: unknown) => ErrorClass) | undefined;
  /** Secrets to redact from the error's message and fields. */
  readonly secrets?: SecretSet | undefined;
  /**
   * What a `TypeError` or `RangeError` means: `misuse` lets it through (the
   * caller passed a wrong argument), `malformed` makes it a Transient
   * `PROVIDER_MALFORMED_ANSWER` (it came from reading a backend answer).
   */
  readonly typeErrors: 'misuse' | 'malformed';
}

/**
 * Whether `err` is a failure to read a backend's answer: a `TypeError`,
 * `RangeError` or `SyntaxError` (a list that is `null`, a 200 that is not
 * JSON, a count out of range), except a `TypeError` that stands for a
 * network failure (fetch and undici report a refused connection or a body
 * cut short as `TypeError: fetch failed` or `TypeError: terminated`, with
 * the socket's error, which has a string `code`, as the cause): that is the
 * backend going away, not an answer to read.
 *
 * The shell makes such a failure a Transient `PROVIDER_MALFORMED_ANSWER`; a
 * provider that skips failing parts of a listing (§4.7) uses this to let a
 * malformed answer through instead of skipping it.
 */
export function isMalformedAnswer(err: unknown): boolean {
  if (err instanceof SyntaxError || err instanceof RangeError) return true;
  return err instanceof TypeError && !networkFailure(err);
}

function networkFailure(err: TypeError): boolean {
  const cause = (err as { cause?: unknown }).cause;
  return (
    typeof cause === 'object' &&
    cause !== null &&
    typeof (cause as { code?: unknown }).code === 'string'
  );
}

/**
 * The error funnel: turns anything thrown by an operation into what leaves
 * the provider. In order: a failure after the signal fired is the
 * cancellation error (unless it is a decided Permanent, NotFound or
 * QuotaExceeded answer); a ProviderError keeps its class and message and is
 * re-issued with the configured name and this operation when it names
 * others; a malformed answer ({@link isMalformedAnswer}) is a Transient
 * `PROVIDER_MALFORMED_ANSWER` (or misuse, see `typeErrors`); a call past
 * its budget ({@link BudgetError}) is Transient; anything else goes through
 * `classify`. Inside Create a NotFound is Transient. Finally, declared
 * secrets are redacted from the message and the whole cause chain.
 */
export function toOperationError(thrown: unknown, o: FunnelOptions): unknown {
  const { provider, op, signal } = o;
  let err: ProviderError;
  if (signal?.aborted && !(ProviderError.isInstance(thrown) && thrown.errorClass !== 'Transient')) {
    err = abortedError(provider, op, signal);
  } else if (ProviderError.isInstance(thrown)) {
    err = restamp(thrown, provider, op);
  } else if (isMalformedAnswer(thrown)) {
    if (o.typeErrors === 'misuse' && !(thrown instanceof SyntaxError)) return thrown;
    err = malformed(provider, op, thrown as Error);
  } else if (BudgetError.isInstance(thrown)) {
    err = providerError('Transient', { provider, op, message: thrown.message, cause: thrown });
  } else {
    let cls: ErrorClass = 'Transient';
    try {
      cls = o.classify?.(op, thrown) ?? 'Transient';
    } catch {
      cls = 'Transient';
    }
    if (op === 'create' && cls === 'NotFound') cls = 'Transient';
    err = providerError(cls, { provider, op, message: describe(thrown), cause: thrown });
  }
  return o.secrets === undefined ? err : redactError(err, o.secrets);
}

function malformed(provider: string, op: Operation, cause: Error): ProviderError {
  return new MalformedAnswerError({
    provider,
    op,
    message: `the backend's answer could not be read (${cause.name}: ${cause.message})`,
    cause,
  });
}

/** The error with this provider name and operation, NotFound made Transient inside Create. */
function restamp(err: ProviderError, provider: string, op: Operation): ProviderError {
  const cls: ErrorClass =
    op === 'create' && err.errorClass === 'NotFound' ? 'Transient' : err.errorClass;
  if (err.provider === provider && err.op === op && cls === err.errorClass) return err;
  const options: ProviderErrorOptions = { provider, op, message: err.message, cause: err };
  return err.code === 'PROVIDER_MALFORMED_ANSWER'
    ? new MalformedAnswerError(options)
    : providerError(cls, options);
}

function redactError(err: ProviderError, secrets: SecretSet): ProviderError {
  if (secrets.size === 0) return err;
  const cause: unknown = secrets.redactValue(err.cause);
  const message = secrets.redact(err.message);
  if (cause === err.cause && message === err.message && !secrets.leaksInto(err.stack ?? '')) {
    return err;
  }
  const options: ProviderErrorOptions = { provider: err.provider, op: err.op, message, cause };
  return err.code === 'PROVIDER_MALFORMED_ANSWER'
    ? new MalformedAnswerError(options)
    : providerError(err.errorClass, options);
}

/** A failure's message for people: its own, its name, or a word for what it is. */
export function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  return 'unknown failure';
}
