/**
 * The provider module: the shape a provider package exports (type, config
 * schema, profile, `create`), the dependencies it is built with, config
 * validation and its error, and `createProvider`, which builds a provider
 * from a module inside the operation shell and the observe decorator.
 *
 * @module
 */
import type { Meter, Tracer } from '@opentelemetry/api';
import { type ErrorClass, type Operation, PermanentError } from './errors.js';
import { type Logger, silentLogger } from './logger.js';
import { observe } from './observe.js';
import { credentialRotationOf, type Profile, profileProblems } from './profile.js';
import { redactingLogger, SecretSet } from './secrets.js';
import { operationShell, type ProviderImplementation } from './shell.js';
import type { Provider } from './types.js';

/** One problem found by a config schema. */
export interface ConfigIssue {
  /** What is wrong, for people. */
  readonly message: string;
  /** Where in the block: keys and indexes from the block's root. */
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** What a config schema answers: the validated value with defaults filled in, or the issues. */
export type ConfigResult<T> =
  | { readonly value: T; readonly issues?: undefined }
  | { readonly issues: readonly ConfigIssue[] };

/**
 * A provider's config schema. The shape is that of the Standard Schema
 * interface (version 1), so a schema from any library that implements it
 * (zod, valibot, arktype) can be used as is, and a hand-written one works
 * too.
 */
export interface ConfigSchema<T> {
  /**
   * The Standard Schema v1 properties: `version`, `vendor`, `validate` and the optional `types`.
   */
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    validate(value: unknown): ConfigResult<T> | Promise<ConfigResult<T>>;
    readonly types?: { readonly input: unknown; readonly output: T } | undefined;
  };
}

/** The type a schema validates to. */
export type ConfigOf<S> = S extends ConfigSchema<infer T> ? T : never;

/** A clock, injected so tests can control time. */
export interface Clock {
  /** The current time. */
  now(): Date;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };

/** What the caller hands a provider module when building a provider. */
export interface ProviderDeps {
  /** Where the provider logs; a silent logger when omitted. */
  readonly logger?: Logger | undefined;
  /** The OpenTelemetry tracer for operation spans; the global one when omitted. */
  readonly tracer?: Tracer | undefined;
  /** The OpenTelemetry meter for operation metrics; the global one when omitted. */
  readonly meter?: Meter | undefined;
  /** The clock the provider reads the time from (creation marks); the system clock when omitted. */
  readonly clock?: Clock | undefined;
}

/**
 * What `createProvider` adds to the caller's dependencies before it hands
 * them to `module.create`.
 */
export interface ShellDeps {
  /** The logger to write to: the caller's (or a silent one), redacting `secrets`. */
  readonly logger: Logger;
  /**
   * Add every credential read at run time (a token file's content, a
   * password): the shell redacts them from errors, log lines and Checker
   * results, in plain, base64, hex and URL-encoded form.
   */
  readonly secrets: SecretSet;
}

/**
 * What a provider package exports (as its default export and as
 * `providerModule`): the operator loads providers by `type` or by package
 * name through this shape, and a third-party provider plugs in the same way.
 */
export interface ProviderModule<
  Config = unknown,
  Deps extends ProviderDeps = ProviderDeps,
  Id = unknown,
> {
  /** The type name used in providers files (`proxmox`, `kvm2`, `local`). */
  readonly type: string;
  /** Validates a config block and fills in its defaults. */
  readonly configSchema: ConfigSchema<Config>;
  /** The provider's choices on the contract's axes. */
  readonly profile: Profile;
  /**
   * The classify table (§5): the class of a backend failure, for anything
   * an operation throws that is not already a ProviderError. Unknown
   * failures are Transient.
   */
  classify(op: Operation, err: unknown): ErrorClass;
  /**
   * Builds the provider's backend logic from a configured name and a
   * validated block; `createProvider` wraps it in the operation shell.
   * Never touches the network (contract §1.1).
   */
  create(name: string, config: Config, deps: Deps & ShellDeps): ProviderImplementation<Id>;
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Renders config issues as `path: message` lines under `prefix` (e.g. `providers[0].proxmox`). */
export function formatConfigIssues(issues: readonly ConfigIssue[], prefix = ''): string[] {
  return issues.map((issue) => {
    const segs = (issue.path ?? []).map((p) =>
      typeof p === 'object' && p !== null ? (p as { key: PropertyKey }).key : p,
    );
    let path = prefix;
    for (const s of segs) {
      path += typeof s === 'number' ? `[${s}]` : path === '' ? String(s) : `.${String(s)}`;
    }
    return path === '' ? issue.message : `${path}: ${issue.message}`;
  });
}

/** Validates a config block; rejects with every issue, each naming its path. */
export async function validateConfig<T>(
  schema: ConfigSchema<T>,
  input: unknown,
  prefix = '',
): Promise<T> {
  const result = await schema['~standard'].validate(input);
  if (result.issues !== undefined) {
    const lines = formatConfigIssues(result.issues, prefix);
    throw new ConfigError(lines);
  }
  return result.value;
}

/** What marks a {@link ConfigError}, the same in every copy of this package. */
const CONFIG_BRAND = Symbol.for('@proxy-op/contract.ConfigError');

/** A config block that does not validate. `problems` has one line per issue, each with its path. */
export class ConfigError extends Error {
  /** Always `PROVIDER_CONFIG_INVALID`. */
  readonly code = 'PROVIDER_CONFIG_INVALID';
  /** One line per issue, each starting with the issue's path. */
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid provider config:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
    Object.defineProperty(this, CONFIG_BRAND, { value: true });
  }
  /** Always `ConfigError`. */
  override get name(): string {
    return 'ConfigError';
  }
  /**
   * True for a ConfigError from any copy of this package (a provider
   * module installed beside another copy of the contract than its caller's).
   */
  static isInstance(value: unknown): value is ConfigError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[CONFIG_BRAND] === true &&
      Array.isArray((value as { problems?: unknown }).problems)
    );
  }
}

/**
 * Builds a ready-to-use provider from a module: checks the name and the
 * module's shape, validates the config block (rejecting with a
 * {@link ConfigError} that lists every issue), calls `module.create` with
 * the caller's dependencies plus a redacting logger and a {@link SecretSet},
 * wraps the result in the operation shell (signal check, per-name lock,
 * error funnel, redaction, Checker policy) and then with {@link observe}.
 * This is how the operator builds providers, and how a tool author should.
 */
export async function createProvider<Config, Deps extends ProviderDeps, Id>(
  module: ProviderModule<Config, Deps, Id>,
  name: string,
  config: unknown,
  deps: Deps,
): Promise<Provider> {
  if (
    module === null ||
    typeof module !== 'object' ||
    typeof module.create !== 'function' ||
    typeof module.classify !== 'function' ||
    typeof module.type !== 'string'
  ) {
    throw new TypeError(
      'createProvider: module must be a ProviderModule (type, configSchema, profile, classify, create)',
    );
  }
  if (typeof name !== 'string' || !NAME_RE.test(name)) {
    throw new ConfigError([
      `name: "${String(name)}" is not a lowercase DNS label (a-z, 0-9 and "-", at most 63 characters)`,
    ]);
  }
  const problems = profileProblems(module.profile);
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `${module.type}: ${p}`));
  const valid = await validateConfig(module.configSchema, config, module.type);
  const secrets = new SecretSet();
  const logger = redactingLogger(deps?.logger ?? silentLogger, secrets);
  const impl = module.create(name, valid, { ...deps, logger, secrets });
  if (impl === null || typeof impl !== 'object' || typeof impl.ids?.parse !== 'function') {
    throw new TypeError(
      `createProvider: the ${module.type} module's create must return a ProviderImplementation (ids, lockKey, create, get, delete, list)`,
    );
  }
  if (
    credentialRotationOf(module.profile) === 'in-place' &&
    typeof impl.updateAuth !== 'function'
  ) {
    throw new TypeError(
      `createProvider: the ${module.type} module's profile says credentialRotation: in-place, so its implementation must have updateAuth (§4.20)`,
    );
  }
  const classify = module.classify.bind(module);
  const shell = operationShell(impl, { name, type: module.type, classify, secrets });
  return observe(shell, { ...deps, logger });
}

/** Throws a Permanent error naming `field` when `value` is not one of `allowed`. */
export function requireOneOf(
  provider: string,
  field: string,
  value: string | undefined,
  allowed: readonly string[],
  where: string,
): string {
  if (value === undefined || value === '') {
    throw new PermanentError({
      provider,
      op: 'create',
      message: `${field} is required; set it to one of ${allowed.join(', ') || '(none configured)'} in ${where}`,
    });
  }
  if (!allowed.includes(value)) {
    throw new PermanentError({
      provider,
      op: 'create',
      message: `${field} "${value}" is not in ${where}; use one of ${allowed.join(', ') || '(none configured)'}`,
    });
  }
  return value;
}
