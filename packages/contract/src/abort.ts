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
 * Settles with `promise`, or rejects with the Transient cancellation error as
 * soon as `signal` fires, whichever comes first. The listener is removed in
 * every path. `promise` is not stopped: pass the signal on to whatever can
 * really be cancelled, and use this where nothing can.
 */
export function raceAbort<T>(
  promise: PromiseLike<T>,
  signal: AbortSignal | undefined,
  provider: string,
  op: Operation,
): Promise<T> {
  if (signal === undefined) return Promise.resolve(promise);
  if (signal.aborted) {
    // Keep an ignored rejection of the abandoned promise from going unhandled.
    Promise.resolve(promise).catch(() => {});
    return Promise.reject(abortedError(provider, op, signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(abortedError(provider, op, signal));
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
