/**
 * What every operation of a {@link ProviderImplementation} receives from the
 * operation shell: the configured provider name, the operation, the
 * caller's signal and error builders carrying both (and, for `delete`, the
 * owner the caller named). The shell builds it; the Checker's context
 * extends it.
 *
 * @module
 */
import type {
  NotFoundError,
  PermanentError,
  QuotaExceededError,
  TransientError,
} from './errors.js';

/** The four operations and the Checker, as the shell names them. */
export type ShellOperation = 'create' | 'get' | 'delete' | 'list' | 'check' | 'updateAuth';

/**
 * What every operation of a {@link ProviderImplementation} receives: the
 * signal, and error builders that carry the configured provider name and
 * the operation.
 */
export interface OperationContext {
  /** The configured provider name. */
  readonly provider: string;
  /** The operation being run. */
  readonly op: ShellOperation;
  /** The caller's signal; pass it to every backend call. */
  readonly signal: AbortSignal | undefined;
  /** A Permanent error for this provider and operation. */
  permanent(message: string, cause?: unknown): PermanentError;
  /** A Transient error for this provider and operation. */
  transient(message: string, cause?: unknown): TransientError;
  /** A NotFound error for this provider and operation (Transient inside Create). */
  notFound(message: string, cause?: unknown): NotFoundError;
  /** A QuotaExceeded error for this provider and operation. */
  quotaExceeded(message: string, cause?: unknown): QuotaExceededError;
  /** Waits `ms`, or rejects with the cancellation error when the signal fires. */
  sleep(ms: number): Promise<void>;
}

/** What `delete` receives besides the context: whose instance the caller means. */
export interface DeleteContext extends OperationContext {
  /** The owner the caller named (`DeleteOptions`); see `deletionProblem`. */
  readonly owner: { readonly uid?: string | undefined; readonly installation?: string | undefined };
}
