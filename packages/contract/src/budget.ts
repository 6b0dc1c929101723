/**
 * The per-call budget: every backend call of a seam gets the caller's
 * signal joined with a timeout of the call's budget. The call underneath
 * receives the joined signal, so it is really aborted when the budget runs
 * out, and the wrapper rejects at that moment whatever the call does next,
 * with a {@link BudgetError} that names the call and the budget. `observeSeam`
 * applies it (its `budget` option), so a provider never writes its own.
 *
 * @module
 */
import { abortable } from './abort.js';
import { BackendError, type BackendErrorOptions } from './backend-error.js';

/** A backend call that did not answer within its budget. Transient; the Checker's reason is `Timeout`. */
export class BudgetError extends BackendError {
  /** `@proxy-op/contract.BudgetError`: the key of the class's brand. */
  static override readonly brand = '@proxy-op/contract.BudgetError';
  /** Always `PROVIDER_CALL_BUDGET`. */
  readonly code = 'PROVIDER_CALL_BUDGET';
  /** The seam method that ran out of time. */
  readonly call: string;
  /** Its budget, in ms. */
  readonly budgetMs: number;

  constructor(call: string, budgetMs: number, options?: BackendErrorOptions) {
    super(`${call} did not answer within ${budgetMs} ms`, options);
    this.call = call;
    this.budgetMs = budgetMs;
  }
}

/**
 * The budget of each seam method in ms: a number for every method, or a
 * function of the method's name. `undefined`, 0 or a negative number leaves
 * the method to the caller's signal alone (and the wrapper leaves the
 * method as it is).
 */
export type SeamBudget = number | ((method: string) => number | undefined);

function budgetOf(budget: SeamBudget, method: string): number | undefined {
  const ms = typeof budget === 'number' ? budget : budget(method);
  return ms !== undefined && ms > 0 ? ms : undefined;
}

/**
 * Where a call's signal goes among its arguments: where the caller passed
 * an `AbortSignal`; else where it passed `undefined` last (a caller with no
 * signal to give); else the method's last declared parameter (padding with
 * `undefined`); else after the arguments given (a method whose parameters
 * cannot be counted, a rest-parameter wrapper, finds it there).
 */
function signalIndex(fn: (...a: unknown[]) => unknown, args: readonly unknown[]): number {
  for (let i = args.length - 1; i >= 0; i--) if (args[i] instanceof AbortSignal) return i;
  if (args.length > 0 && args[args.length - 1] === undefined) return args.length - 1;
  return fn.length > 0 ? fn.length - 1 : args.length;
}

/**
 * Wraps a seam (an object whose methods are backend calls) so each call of
 * a method with a budget is bounded by it. The seam's methods take their
 * `AbortSignal` as their last parameter (`get(id, signal)`,
 * `version(signal)`); the wrapper passes the caller's signal joined with
 * the budget's timeout there (see the rule below). When the budget runs out
 * first, the call rejects at once with a {@link BudgetError}, whatever the
 * call underneath does with its aborted signal; when the caller's signal
 * fires first, with the signal's reason.
 *
 * The signal's place: where the caller passed an `AbortSignal`, or
 * `undefined` as the last argument; otherwise the method's last declared
 * parameter, or after the arguments when it declares none (so a wrapper
 * with a rest parameter beneath the budget still gets its signal).
 */
export function budgetSeam<S extends object>(seam: S, budget: SeamBudget): S {
  return new Proxy(seam, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const ms = budgetOf(budget, prop);
      if (ms === undefined) return value;
      const fn = value as (...a: unknown[]) => unknown;
      const method = prop;
      return (...args: unknown[]) => {
        const at = signalIndex(fn, args);
        const outer = args[at] as AbortSignal | undefined;
        const timeout = AbortSignal.timeout(ms);
        const joined = outer === undefined ? timeout : AbortSignal.any([outer, timeout]);
        const call = args.slice();
        while (call.length < at) call.push(undefined);
        call[at] = joined;
        let result: Promise<unknown>;
        try {
          result = Promise.resolve(fn.apply(target, call));
        } catch (err) {
          result = Promise.reject(err);
        }
        return abortable(result, joined).catch((err: unknown) => {
          if (timeout.aborted && !outer?.aborted) {
            throw new BudgetError(method, ms, err === timeout.reason ? undefined : { cause: err });
          }
          throw err;
        });
      };
    },
  });
}
