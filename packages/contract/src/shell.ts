/**
 * The operation shell: everything every provider must do around its backend
 * logic, done once. `createProvider` wraps a module's
 * {@link ProviderImplementation} in it, so a provider holds backend logic
 * only:
 *
 * - arguments checked first (misuse is a `TypeError`; a bad request, ID or
 *   installation is Permanent), then the signal, before any backend call;
 * - Create and Delete of one instance serialised by a per-name lock whose
 *   wait the signal can cut short;
 * - one error funnel: every failure leaves as a {@link ProviderError} with
 *   the configured provider name and the operation, classified by the
 *   module's `classify`; an answer the provider could not read (any
 *   `TypeError`, `SyntaxError` or `RangeError` from inside) is Transient with
 *   the code `PROVIDER_MALFORMED_ANSWER`; a failure after the signal fired
 *   is the Transient cancellation error;
 * - declared secrets redacted from messages and the whole `cause` chain;
 * - the Checker policy: targets checked concurrently, results in config
 *   order, a target still running when the signal fires answers `Timeout`
 *   with the details it had gathered.
 *
 * @module
 */
import { KeyedLock } from '@proxy-op/keyedlock';
import { abortedError, type CallOptions, sleep } from './abort.js';
import {
  type ErrorClass,
  MalformedAnswerError,
  NotFoundError,
  type Operation,
  PermanentError,
  ProviderError,
  type ProviderErrorOptions,
  providerError,
  QuotaExceededError,
  TransientError,
} from './errors.js';
import { type CheckedCreateRequest, checkCreateRequest, listInstallation } from './request.js';
import type { SecretSet } from './secrets.js';
import {
  type CreateRequest,
  type DeleteOptions,
  type Instance,
  type ListOptions,
  type Provider,
  Reason,
  type TargetResult,
} from './types.js';

/** The four operations and the Checker, as the shell names them. */
export type ShellOperation = 'create' | 'get' | 'delete' | 'list' | 'check';

/**
 * What every operation of a {@link ProviderImplementation} receives: the
 * signal, and error builders that carry the configured provider name and
 * the operation.
 */
export interface OperationContext {
  /** The configured provider name. */
  readonly provider: string;
  readonly op: ShellOperation;
  /** The caller's signal; pass it to every backend call. */
  readonly signal: AbortSignal | undefined;
  /** A Permanent error for this provider and operation. */
  permanent(message: string, cause?: unknown): PermanentError;
  /** A Transient error for this provider and operation. */
  transient(message: string, cause?: unknown): TransientError;
  /** A NotFound error for this provider and operation (Transient inside Create). */
  notFound(message: string, cause?: unknown): NotFoundError;
  /** A QuotaExceeded error for this provider and operation. */
  quotaExceeded(message: string, cause?: unknown): QuotaExceededError;
  /** Waits `ms`, or rejects with the cancellation error when the signal fires. */
  sleep(ms: number): Promise<void>;
}

/** What `delete` receives besides the context: whose instance the caller means. */
export interface DeleteContext extends OperationContext {
  /** The owner the caller named (`DeleteOptions`); see `deletionProblem`. */
  readonly owner: { readonly uid?: string | undefined; readonly installation?: string | undefined };
}

/** One Checker target: a host, node, project or API server. */
export interface CheckTarget {
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
  readonly reason: Reason;
  readonly message: string;
  readonly ready?: boolean | undefined;
}

/** The Checker of a {@link ProviderImplementation}. */
export interface ImplementationChecker {
  /** The targets in config order. */
  targets(): readonly CheckTarget[];
  /**
   * Checks one target. Throwing is allowed: the shell answers `Timeout`
   * when the round's signal fired, and `APIError` with the (redacted)
   * message otherwise; a provider that can name a better reason catches
   * and answers it.
   */
  check(target: CheckTarget, ctx: CheckContext): Promise<CheckAnswer>;
}

/** How a provider's IDs are parsed; an {@link IdFormat} fits. */
export interface IdParser<Id> {
  /** The parts of `id`, or undefined when it is malformed. Must not throw. */
  parse(id: string): Id | undefined;
  /** The ID's shape for messages: `vms/<vmid>/<name>`. */
  readonly shape: string;
}

/**
 * What a provider module builds: the backend logic of the four methods and
 * the Checker, without the shell. Arguments arrive checked, the signal has
 * not fired yet, and Create and Delete hold the instance's lock.
 */
export interface ProviderImplementation<Id = unknown> {
  /** Strict ID parsing (contract §6); a malformed ID never reaches `get` or `delete`. */
  readonly ids: IdParser<Id>;
  /** The per-instance lock key of an ID: the instance name Create locks on. */
  lockKey(id: Id): string;
  /** Creates or adopts the instance; resolves with its ID. Runs under the lock on `req.name`. */
  create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string>;
  /** Reads the instance back from the backend. */
  get(id: Id, ctx: OperationContext): Promise<Instance>;
  /** Deletes the instance, leaving alone one that is not the caller's. Runs under the lock. */
  delete(id: Id, ctx: DeleteContext): Promise<void>;
  /** Every instance marked for `installation`. */
  list(installation: string, ctx: OperationContext): Promise<Instance[]>;
  /** The Checker, when the provider has one. */
  readonly checker?: ImplementationChecker | undefined;
  /** Releases connections and timers. */
  close?(): Promise<void>;
}

/** Options of {@link operationShell}. */
export interface ShellOptions {
  /** The configured provider name. */
  readonly name: string;
  /** The provider type. */
  readonly type: string;
  /** The module's classify table (§5). */
  readonly classify: (op: Operation, err: unknown) => ErrorClass;
  /** Secrets to redact from errors and Checker results. */
  readonly secrets?: SecretSet | undefined;
}

/** Options of {@link toOperationError}. */
export interface FunnelOptions {
  readonly provider: string;
  readonly op: Operation;
  readonly signal?: AbortSignal | undefined;
  /** Classifies what is not already a ProviderError; Transient when omitted. */
  readonly classify?: ((op: Operation, err: unknown) => ErrorClass) | undefined;
  readonly secrets?: SecretSet | undefined;
  /**
   * What a `TypeError` or `RangeError` means: `misuse` lets it through (the
   * caller passed a wrong argument), `malformed` makes it a Transient
   * `PROVIDER_MALFORMED_ANSWER` (it came from reading a backend answer).
   */
  readonly typeErrors: 'misuse' | 'malformed';
}

/**
 * The error funnel: turns anything thrown by an operation into what leaves
 * the provider. In order: a failure after the signal fired is the
 * cancellation error (unless it is a decided Permanent, NotFound or
 * QuotaExceeded answer); a ProviderError keeps its class and message and is
 * re-issued with the configured name and this operation when it names
 * others; parse failures are malformed answers (or misuse, see
 * `typeErrors`); anything else goes through `classify`. Inside Create a
 * NotFound is Transient. Finally, declared secrets are redacted from the
 * message and the whole cause chain.
 */
export function toOperationError(thrown: unknown, o: FunnelOptions): unknown {
  const { provider, op, signal } = o;
  let err: ProviderError;
  if (signal?.aborted && !(ProviderError.isInstance(thrown) && thrown.errorClass !== 'Transient')) {
    err = abortedError(provider, op, signal);
  } else if (ProviderError.isInstance(thrown)) {
    err = restamp(thrown, provider, op);
  } else if (
    (thrown instanceof TypeError || thrown instanceof RangeError) &&
    !networkFailure(thrown)
  ) {
    if (o.typeErrors === 'misuse') return thrown;
    err = malformed(provider, op, thrown);
  } else if (thrown instanceof SyntaxError) {
    err = malformed(provider, op, thrown);
  } else {
    let cls: ErrorClass = 'Transient';
    try {
      cls = o.classify?.(op, thrown) ?? 'Transient';
    } catch {
      cls = 'Transient';
    }
    if (op === 'create' && cls === 'NotFound') cls = 'Transient';
    err = providerError(cls, { provider, op, message: describe(thrown), cause: thrown });
  }
  return o.secrets === undefined ? err : redactError(err, o.secrets);
}

/**
 * A `TypeError` that stands for a network failure: fetch and undici report
 * a refused connection or a body cut short as `TypeError: fetch failed` or
 * `TypeError: terminated`, with the socket's error (a string `code`) as the
 * cause. That is the backend going away, not an answer to read: classify it.
 */
function networkFailure(err: Error): boolean {
  const cause = (err as { cause?: unknown }).cause;
  return (
    err instanceof TypeError &&
    typeof cause === 'object' &&
    cause !== null &&
    typeof (cause as { code?: unknown }).code === 'string'
  );
}

function malformed(provider: string, op: Operation, cause: Error): ProviderError {
  return new MalformedAnswerError({
    provider,
    op,
    message: `the backend's answer could not be read (${cause.name}: ${cause.message})`,
    cause,
  });
}

/** The error with this provider name and operation, NotFound made Transient inside Create. */
function restamp(err: ProviderError, provider: string, op: Operation): ProviderError {
  const cls: ErrorClass =
    op === 'create' && err.errorClass === 'NotFound' ? 'Transient' : err.errorClass;
  if (err.provider === provider && err.op === op && cls === err.errorClass) return err;
  const options: ProviderErrorOptions = { provider, op, message: err.message, cause: err };
  return err.code === 'PROVIDER_MALFORMED_ANSWER'
    ? new MalformedAnswerError(options)
    : providerError(cls, options);
}

function redactError(err: ProviderError, secrets: SecretSet): ProviderError {
  if (secrets.size === 0) return err;
  const cause: unknown = secrets.redactValue(err.cause);
  const message = secrets.redact(err.message);
  if (cause === err.cause && message === err.message && !secrets.leaksInto(err.stack ?? '')) {
    return err;
  }
  const options: ProviderErrorOptions = { provider: err.provider, op: err.op, message, cause };
  return err.code === 'PROVIDER_MALFORMED_ANSWER'
    ? new MalformedAnswerError(options)
    : providerError(err.errorClass, options);
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  return 'unknown failure';
}

function checkOptions(opts: unknown, op: string): AbortSignal | undefined {
  if (opts === undefined) return undefined;
  if (opts === null || typeof opts !== 'object') {
    throw new TypeError(`${op}: options must be an object`);
  }
  const signal = (opts as CallOptions).signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`${op}: options.signal must be an AbortSignal`);
  }
  return signal;
}

/**
 * Wraps a {@link ProviderImplementation} in the operation shell, giving a
 * {@link Provider}. `createProvider` does this (and adds `observe`); call
 * it directly only to build a provider without a module.
 */
export function operationShell<Id>(
  impl: ProviderImplementation<Id>,
  options: ShellOptions,
): Provider {
  const { name, type, classify, secrets } = options;
  const lock = new KeyedLock<string>();

  function context(op: ShellOperation, signal: AbortSignal | undefined): OperationContext {
    const make = <E extends ProviderError>(
      Ctor: new (o: ProviderErrorOptions) => E,
      message: string,
      cause: unknown,
    ): E => new Ctor({ provider: name, op, message, cause });
    return {
      provider: name,
      op,
      signal,
      permanent: (m, c) => make(PermanentError, m, c),
      transient: (m, c) => make(TransientError, m, c),
      notFound: (m, c) => make(NotFoundError, m, c),
      quotaExceeded: (m, c) => make(QuotaExceededError, m, c),
      sleep: (ms) => sleep(ms, signal, name, op),
    };
  }

  const fail = (op: ShellOperation, signal: AbortSignal | undefined, thrown: unknown): unknown =>
    toOperationError(thrown, {
      provider: name,
      op,
      signal,
      classify,
      secrets,
      typeErrors: 'malformed',
    });

  async function run<T>(
    op: ShellOperation,
    signal: AbortSignal | undefined,
    key: string | undefined,
    body: () => Promise<T>,
  ): Promise<T> {
    try {
      if (signal?.aborted) throw abortedError(name, op, signal);
      return key === undefined ? await body() : await lock.run(key, body, { signal });
    } catch (thrown) {
      throw fail(op, signal, thrown);
    }
  }

  function parse(id: unknown, op: 'get' | 'delete'): Id {
    if (typeof id !== 'string') throw new TypeError(`${op}: id must be a string`);
    let parts: Id | undefined;
    try {
      parts = impl.ids.parse(id);
    } catch {
      parts = undefined;
    }
    if (parts === undefined) {
      throw new PermanentError({
        provider: name,
        op,
        message: `malformed provider ID ${JSON.stringify(id).slice(0, 200)}: expected ${impl.ids.shape}`,
      });
    }
    return parts;
  }

  const provider: Provider = {
    name,
    type,
    create(req: CreateRequest, opts?: CallOptions): Promise<string> {
      try {
        const signal = checkOptions(opts, 'create');
        const checked = checkCreateRequest(name, req);
        const ctx = context('create', signal);
        return run('create', signal, checked.name, () => impl.create(checked, ctx));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    get(id: string, opts?: CallOptions): Promise<Instance> {
      try {
        const signal = checkOptions(opts, 'get');
        const parts = parse(id, 'get');
        const ctx = context('get', signal);
        return run('get', signal, undefined, () => impl.get(parts, ctx));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    delete(id: string, opts?: DeleteOptions): Promise<void> {
      try {
        const signal = checkOptions(opts, 'delete');
        const parts = parse(id, 'delete');
        const owner = { uid: opts?.uid, installation: opts?.installation };
        for (const [field, v] of Object.entries(owner)) {
          if (v !== undefined && typeof v !== 'string') {
            throw new TypeError(`delete: options.${field} must be a string`);
          }
        }
        const ctx: DeleteContext = { ...context('delete', signal), owner };
        return run('delete', signal, impl.lockKey(parts), () => impl.delete(parts, ctx));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    listByTag(opts?: ListOptions): Promise<Instance[]> {
      try {
        const signal = checkOptions(opts, 'listByTag');
        const installation = listInstallation(name, opts);
        const ctx = context('list', signal);
        return run('list', signal, undefined, () => impl.list(installation, ctx));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
  const checker = impl.checker;
  if (checker !== undefined) {
    (provider as { check: Provider['check'] }).check = (opts?: CallOptions) => {
      try {
        return runChecker(checker, context, checkOptions(opts, 'check'), secrets);
      } catch (err) {
        return Promise.reject(err);
      }
    };
  }
  if (impl.close !== undefined) {
    const close = impl.close.bind(impl);
    let closing: Promise<void> | undefined;
    (provider as { close: Provider['close'] }).close = () => {
      closing ??= close();
      return closing;
    };
  }
  return provider;
}

async function runChecker(
  checker: ImplementationChecker,
  context: (op: ShellOperation, signal: AbortSignal | undefined) => OperationContext,
  signal: AbortSignal | undefined,
  secrets: SecretSet | undefined,
): Promise<TargetResult[]> {
  const targets = checker.targets();
  const details = targets.map((t): Record<string, string | number | boolean> => ({ ...t.details }));
  const base = (t: CheckTarget) => ({ target: t.target, address: t.address });
  const clean = (r: TargetResult): TargetResult =>
    secrets === undefined || secrets.size === 0 ? r : secrets.redactValue(r);
  const timeout = (i: number): TargetResult =>
    clean({
      ...base(targets[i] as CheckTarget),
      ready: false,
      reason: Reason.Timeout,
      message: 'the check ran out of time',
      details: { ...details[i] },
    });
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
        const d = details[i] as Record<string, string | number | boolean>;
        const ctx: CheckContext = {
          ...context('check', round.signal),
          signal: round.signal,
          details: d,
        };
        const answer = checker.check(target, ctx).then(
          (a): TargetResult => ({
            ...base(target),
            ready: a.ready ?? a.reason === Reason.Reachable,
            reason: a.reason,
            message: a.message,
            details: { ...d },
          }),
          (err: unknown): TargetResult | 'ended' =>
            round.signal.aborted
              ? 'ended'
              : {
                  ...base(target),
                  ready: false,
                  reason: Reason.APIError,
                  message: describe(err),
                  details: { ...d },
                },
        );
        const r = await Promise.race([answer, ended]);
        return r === 'ended' ? timeout(i) : clean(r);
      }),
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
    round.abort();
  }
}
