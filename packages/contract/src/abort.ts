/**
 * Cancellation: the options every call takes (a signal), the Transient
 * error of a cancelled call, and waiting on a promise, a race or a sleep
 * that the signal cuts short.
 *
 * @module
 */
import { type Operation, TransientError } from './errors.js';

/** The options every provider method and the Checker take. */
export interface CallOptions {
  /** Cancels the call; it then rejects promptly with a Transient error. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The Transient error for a cancelled call: the message says so, and `cause`
 * is the signal's reason.
 */
export function abortedError(provider: string, op: Operation, signal: AbortSignal): TransientError {
  const reason: unknown = signal.reason;
  const what =
    reason instanceof Error && reason.name === 'TimeoutError' ? 'timed out' : 'was cancelled';
  return new TransientError({ provider, op, message: `${op} ${what}`, cause: reason });
}

/** Throws the Transient error for a cancelled call when `signal` has fired. */
export function throwIfAborted(
  signal: AbortSignal | undefined,
  provider: string,
  op: Operation,
): void {
  if (signal?.aborted) throw abortedError(provider, op, signal);
}

/**
 * Settles with `promise`, or rejects with the signal's own reason as soon as
 * `signal` fires, whichever comes first. The listener is removed in every
 * path, and a later rejection of the abandoned promise never goes
 * unhandled. `promise` is not stopped: pass the signal on to whatever can
 * really be cancelled, and use this only for what cannot (a lazy client
 * being built, a token fetch, a gate a test holds).
 */
export function abortable<T>(promise: PromiseLike<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return Promise.resolve(promise);
  if (signal.aborted) {
    Promise.resolve(promise).catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      Promise.resolve(promise).catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * {@link abortable} for provider code: when `signal` fires first, rejects
 * with the Transient cancellation error of `provider` and `op` instead of
 * the signal's reason.
 */
export function raceAbort<T>(
  promise: PromiseLike<T>,
  signal: AbortSignal | undefined,
  provider: string,
  op: Operation,
): Promise<T> {
  if (signal === undefined) return Promise.resolve(promise);
  return abortable(promise, signal).catch((err: unknown) => {
    throw signal.aborted && err === signal.reason ? abortedError(provider, op, signal) : err;
  });
}

/**
 * Waits `ms` milliseconds, or rejects with the Transient cancellation error
 * when `signal` fires first. For polling loops inside providers.
 */
export function sleep(
  ms: number,
  signal: AbortSignal | undefined,
  provider: string,
  op: Operation,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortedError(provider, op, signal));
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(provider, op, signal as AbortSignal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
