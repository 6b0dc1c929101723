/**
 * The probe's one error: a probe its caller cancelled. Everything else a
 * probe meets (a refused connection, a 403, a wrong nonce, its own timeout)
 * is a result, not an error; misuse (a target that is no URL) is a
 * `TypeError`.
 *
 * @module
 */

/** The cross-copy brand of {@link ProbeAbortedError}. */
const BRAND: unique symbol = Symbol.for('@proxy-op/probe.ProbeAbortedError');

/**
 * Rejection of {@link probe} when its `signal` aborted: the probe's socket
 * was closed and no result is given. The signal's `reason` is the `cause`.
 * Check it with {@link ProbeAbortedError.isInstance}, which also recognises
 * an error made by another installed copy of this package, or with
 * `err.code === 'PROBE_ABORTED'`.
 */
export class ProbeAbortedError extends Error {
  /** Always `'ProbeAbortedError'`. */
  override readonly name = 'ProbeAbortedError' as const;
  /** Stable code for this error; never changes within a major version. */
  readonly code = 'PROBE_ABORTED' as const;

  /** @internal Cross-copy brand, see {@link ProbeAbortedError.isInstance}. */
  get [BRAND](): true {
    return true;
  }

  /** @param reason - The aborted signal's `reason`, kept as `cause`. */
  constructor(reason: unknown) {
    super('the probe was aborted', { cause: reason });
  }

  /** True for a {@link ProbeAbortedError} of any installed copy of this package. */
  static isInstance(value: unknown): value is ProbeAbortedError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true
    );
  }

  /** The error as JSON: name, code, message. */
  toJSON(): { name: string; code: string; message: string } {
    return { name: this.name, code: this.code, message: this.message };
  }
}
