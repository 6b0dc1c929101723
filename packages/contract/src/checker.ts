/**
 * The Checker policy of the operation shell: targets checked concurrently,
 * results in config order, a target still running when the round ends
 * answering `Timeout` with the details it had gathered, a call past its
 * budget answering `Timeout`, and every answer redacted.
 *
 * @module
 */
import { BudgetError } from './budget.js';
import { describe } from './funnel.js';
import type { SecretSet } from './secrets.js';
import type {
  CheckContext,
  CheckTarget,
  ImplementationChecker,
  OperationContext,
} from './shell.js';
import { Reason, type TargetResult } from './types.js';

type Details = Record<string, string | number | boolean>;

/**
 * Runs one Checker round over `checker`'s targets. `context` builds the
 * operation context of a target's check, bound to the round's signal.
 */
export async function runChecker(
  checker: ImplementationChecker,
  context: (signal: AbortSignal) => OperationContext,
  signal: AbortSignal | undefined,
  secrets: SecretSet | undefined,
): Promise<TargetResult[]> {
  const targets = checker.targets();
  const details = targets.map((t): Details => ({ ...t.details }));
  const clean = (r: TargetResult): TargetResult =>
    secrets === undefined || secrets.size === 0 ? r : secrets.redactValue(r);
  const result = (i: number, reason: Reason, message: string, ready?: boolean): TargetResult => {
    const t = targets[i] as CheckTarget;
    return clean({
      target: t.target,
      address: t.address,
      ready: ready ?? reason === Reason.Reachable,
      reason,
      message,
      details: { ...details[i] },
    });
  };
  const timeout = (i: number) => result(i, Reason.Timeout, 'the check ran out of time', false);
  if (signal?.aborted) return targets.map((_t, i) => timeout(i));

  const round = new AbortController();
  const onAbort = () => round.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const ended = new Promise<'ended'>((resolve) => {
    round.signal.addEventListener('abort', () => resolve('ended'), { once: true });
  });
  try {
    return await Promise.all(
      targets.map(async (target, i): Promise<TargetResult> => {
        const ctx: CheckContext = {
          ...context(round.signal),
          signal: round.signal,
          details: details[i] as Details,
        };
        const answer = checker.check(target, ctx).then(
          (a): TargetResult | 'ended' =>
            round.signal.aborted ? 'ended' : result(i, a.reason, a.message, a.ready),
          (err: unknown): TargetResult | 'ended' => {
            if (round.signal.aborted) return 'ended';
            const budget = budgetIn(err);
            if (budget !== undefined) return result(i, Reason.Timeout, describe(err), false);
            let a: ReturnType<NonNullable<ImplementationChecker['failed']>>;
            try {
              a = checker.failed?.(err, ctx);
            } catch {
              a = undefined;
            }
            return a === undefined
              ? result(i, Reason.APIError, describe(err), false)
              : result(i, a.reason, a.message, a.ready);
          },
        );
        const r = await Promise.race([answer, ended]);
        return r === 'ended' ? timeout(i) : r;
      }),
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
    round.abort();
  }
}

/** The {@link BudgetError} that is `err` or one of its causes (a dial that failed on one), if any. */
function budgetIn(err: unknown): BudgetError | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    if (BudgetError.isInstance(e)) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
