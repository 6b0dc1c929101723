/**
 * The `local` backend's own failures, found as a `ProviderError`'s
 * `cause`: what goes wrong with the proxy processes and the address range
 * that is not an operating-system error. Branded: `LocalError.isInstance`
 * works across two installed copies of this package.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';

/** What a {@link LocalError} reports. */
export type LocalErrorCode =
  /** No address of the range is free on the requested port (QuotaExceeded). */
  | 'ADDRESS_RANGE_EXHAUSTED'
  /** The proxy process exited while starting (Transient). */
  | 'START_FAILED'
  /** The proxy did not answer within `timeouts.startMs` (Transient). */
  | 'START_TIMEOUT'
  /** The process did not exit after SIGKILL (Transient). */
  | 'STOP_TIMEOUT';

/** A failure of the local backend that is not an operating-system error. */
export class LocalError extends BackendError {
  /** `@proxy-op/provider-local.LocalError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-local.LocalError';
  /** What failed. */
  readonly code: LocalErrorCode;

  constructor(code: LocalErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
