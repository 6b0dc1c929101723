/**
 * The operator's own errors: one base with a stable `code` per class, a
 * fixed `name`, and a `Symbol.for` brand, so `isInstance` holds across two
 * installed copies of the package. Codes are API and never change within a
 * major version; messages may.
 *
 * @module
 */

const BRAND = Symbol.for('@proxy-op/operator.OperatorError');

/** The codes of the operator's errors. */
export const OperatorErrorCode = {
  /** A command line the command cannot run with (exit code 2). */
  Usage: 'OPERATOR_USAGE',
  /** A reconcile that must not be retried until something changes the key again. */
  Terminal: 'OPERATOR_TERMINAL',
  /** A Kubernetes API request that failed. */
  KubeApi: 'KUBE_API_ERROR',
} as const;

/** One of the values of {@link (OperatorErrorCode:variable)}. */
export type OperatorErrorCode = (typeof OperatorErrorCode)[keyof typeof OperatorErrorCode];

/** What every error of the operator shares. */
export abstract class OperatorError extends Error {
  /** The stable code of the class. */
  abstract readonly code: OperatorErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** True for an error of the operator, also from another copy of this package. */
  static isInstance(e: unknown): e is OperatorError {
    return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[BRAND] === true;
  }

  /** The name, code and message (never a cause, which may hold what was sent). */
  toJSON(): { name: string; code: string; message: string } {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/** `e` is an error of the operator with `code`. */
export function hasCode(e: unknown, code: OperatorErrorCode): boolean {
  return OperatorError.isInstance(e) && e.code === code;
}

/** A command line the command cannot run with; `main` prints it and exits 2. */
export class UsageError extends OperatorError {
  /** Always `OPERATOR_USAGE`. */
  readonly code = OperatorErrorCode.Usage;
  /** Always `UsageError`. */
  override get name(): string {
    return 'UsageError';
  }
  /** True for a UsageError, also from another copy of this package. */
  static override isInstance(e: unknown): e is UsageError {
    return hasCode(e, OperatorErrorCode.Usage);
  }
}

/**
 * Thrown (or wrapped) by a handler of the work queue to stop retries for a
 * key: the key is forgotten and not requeued until something adds it again.
 */
export class TerminalError extends OperatorError {
  /** Always `OPERATOR_TERMINAL`. */
  readonly code = OperatorErrorCode.Terminal;
  /** Always `TerminalError`. */
  override get name(): string {
    return 'TerminalError';
  }
  /** True for a TerminalError, also from another copy of this package. */
  static override isInstance(e: unknown): e is TerminalError {
    return hasCode(e, OperatorErrorCode.Terminal);
  }
}
