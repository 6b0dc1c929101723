/**
 * The Checker of a provider: what a {@link ProviderImplementation}'s Checker
 * is (its targets, the context and answer of one check), and the operation
 * shell's policy for a round: targets checked concurrently, results in
 * config order, a target still running when the round ends answering
 * `Timeout` with the details it had gathered, a call past its budget
 * answering `Timeout`, and every answer redacted.
 *
 * @module
 */
import { BudgetError } from './budget.js';
import type { OperationContext } from './context.js';
import { describe } from './funnel.js';
import type { SecretSet } from './secrets.js';
import { Reason, type TargetResult } from './types.js';

/** One Checker target: a host, node, project or API server. */
export interface CheckTarget {
  /** The target's name (a host, a node, a project), unique within the provider. */
  readonly target: string;
  /** Where it is reached (a URL or host), for people. Never holds a secret. */
  readonly address: string;
  /**
   * Facts known before any call (from the config): every result starts
   * with them, a `Timeout` too, even when the signal fired before the check.
   */
  readonly details?: Readonly<Record<string, string | number | boolean>> | undefined;
}

/** What the Checker receives for one target. */
export interface CheckContext extends OperationContext {
  /** Fires when the caller's signal fires or the round ends. */
  readonly signal: AbortSignal;
  /**
   * Facts gathered so far; fill it in as the check goes, so a target that
   * runs out of time still reports how far it got.
   */
  readonly details: Record<string, string | number | boolean>;
}

/** A Checker's answer for one target; `ready` defaults to `reason === 'Reachable'`. */
export interface CheckAnswer {
  /** Why the target is or is not ready: a shared {@link (Reason:variable)} or the provider's own. */
  readonly reason: Reason;
  /** What was found, for people. Never holds a secret. */
  readonly message: string;
  /** Whether the target can take work; `reason === 'Reachable'` when omitted. */
  readonly ready?: boolean | undefined;
}

/** The Checker of a {@link ProviderImplementation}. */
export interface ImplementationChecker {
  /** The targets in config order. */
  targets(): readonly CheckTarget[];
  /**
   * Checks one target. Throwing is allowed, and is the way to report a
   * failure the provider has no reason of its own for: the shell answers
   * `Timeout` when the round ended or a call ran past its budget (a
   * {@link BudgetError}, or an error caused by one), then asks
   * {@link ImplementationChecker.failed},
   * then answers `APIError` with the (redacted) message. An answer that
   * arrives after the round ended is `Timeout` too, so a check never tests
   * the signal itself.
   */
  check(target: CheckTarget, ctx: CheckContext): Promise<CheckAnswer>;
  /**
   * The answer for a failure `check` threw (a provider's own reasons:
   * `Unauthorized` for a 401, `CertificateInvalid`, ...), or undefined for
   * the shell's `APIError`. Called only while the round runs and never for
   * a failure caused by a {@link BudgetError}; it may add to `ctx.details`.
   * Must not throw.
   */
  failed?(err: unknown, ctx: CheckContext): CheckAnswer | undefined;
}

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
