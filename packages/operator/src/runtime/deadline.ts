/**
 * The budget of one provider call the operator makes (reconciles, GC, the
 * health monitor): a deadline joined with the operator's stop signal.
 *
 * @module
 */

/**
 * Runs `fn` with a signal that aborts after `ms` (a `TimeoutError`) or when
 * `stop` aborts (with its reason), whichever comes first. The timer is
 * cleared when the call settles: a burst of calls leaves no timers (nor
 * listeners) behind for the length of the deadline.
 */
export async function withDeadline<T>(
  ms: number,
  stop: AbortSignal | undefined,
  fn: (opts: { signal: AbortSignal }) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const timer = setTimeout(
    () => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  const onStop = () => ac.abort(stop?.reason);
  if (stop?.aborted) onStop();
  else stop?.addEventListener('abort', onStop, { once: true });
  try {
    return await fn({ signal: ac.signal });
  } finally {
    clearTimeout(timer);
    stop?.removeEventListener('abort', onStop);
  }
}
