/**
 * A call retried until it succeeds, with a doubling delay between tries
 * (the informer's restart bounds), each failure reported.
 *
 * @module
 */
import { DEFAULTS } from '../defaults.js';
import { sleep } from './sleep.js';

/**
 * Runs `fn` until it resolves; after each failure calls `failed` with the
 * error and the delay before the next try. Rejects with `signal`'s reason
 * once it aborts.
 */
export async function retrying<T>(
  fn: () => Promise<T>,
  signal: AbortSignal,
  failed: (err: unknown, retryInMs: number) => void,
): Promise<T> {
  for (
    let delay: number = DEFAULTS.informerRestartBaseMs;
    ;
    delay = Math.min(delay * 2, DEFAULTS.informerRestartMaxMs)
  ) {
    try {
      return await fn();
    } catch (err) {
      signal.throwIfAborted();
      failed(err, delay);
      await sleep(delay, signal);
    }
  }
}
