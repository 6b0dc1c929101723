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
 * - one error funnel ({@link toOperationError}): every failure leaves as a
 *   {@link ProviderError} with the configured provider name and the
 *   operation, classified by the module's `classify`; an answer the provider
 *   could not read ({@link isMalformedAnswer}) is Transient with the code
 *   `PROVIDER_MALFORMED_ANSWER`; a backend call past its budget
 *   ({@link BudgetError}) is Transient; a failure after the signal fired is
 *   the Transient cancellation error;
 * - declared secrets redacted from messages and the whole `cause` chain;
 * - the Checker policy: targets checked concurrently, results in config
 *   order, a target still running when the round ends, or one whose call
 *   ran past its budget, answers `Timeout` with the details it had
 *   gathered; other failures get the checker's `failed` answer or
 *   `APIError`.
 *
 * @module
 */
import { KeyedLock } from '@proxy-op/keyedlock';
import { abortedError, type CallOptions, sleep } from './abort.js';
import { type ImplementationChecker, runChecker } from './checker.js';
import type { DeleteContext, OperationContext, ShellOperation } from './context.js';
import {
  type ErrorClass,
  NotFoundError,
  type Operation,
  PermanentError,
  type ProviderError,
  type ProviderErrorOptions,
  QuotaExceededError,
  TransientError,
} from './errors.js';
import { toOperationError } from './funnel.js';
import {
  type CheckedCreateRequest,
  checkCreateRequest,
  checkProxyAuth,
  listInstallation,
} from './request.js';
import type { SecretSet } from './secrets.js';
import type {
  CreateRequest,
  DeleteOptions,
  Instance,
  ListOptions,
  Provider,
  ProxyAuth,
} from './types.js';

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
  /**
   * Replaces a running instance's password file (§4.20), for a provider
   * whose profile says `credentialRotation: 'in-place'`. Runs under the lock.
   */
  updateAuth?(id: Id, auth: ProxyAuth, ctx: OperationContext): Promise<void>;
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

  function parse(id: unknown, op: 'get' | 'delete' | 'updateAuth'): Id {
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
  const updateAuth = impl.updateAuth?.bind(impl);
  if (updateAuth !== undefined) {
    (provider as { updateAuth: Provider['updateAuth'] }).updateAuth = (
      id: string,
      auth: ProxyAuth,
      opts?: CallOptions,
    ) => {
      try {
        const signal = checkOptions(opts, 'updateAuth');
        const parts = parse(id, 'updateAuth');
        checkProxyAuth(name, 'updateAuth', auth);
        const ctx = context('updateAuth', signal);
        return run('updateAuth', signal, impl.lockKey(parts), () => updateAuth(parts, auth, ctx));
      } catch (err) {
        return Promise.reject(err);
      }
    };
  }
  const checker = impl.checker;
  if (checker !== undefined) {
    (provider as { check: Provider['check'] }).check = (opts?: CallOptions) => {
      try {
        return runChecker(
          checker,
          (signal) => context('check', signal),
          checkOptions(opts, 'check'),
          secrets,
        );
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
