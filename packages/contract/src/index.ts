/**
 * The proxy-op provider contract.
 *
 * @packageDocumentation
 */
export {
  abortedError,
  type CallOptions,
  raceAbort,
  sleep,
  throwIfAborted,
} from './abort.js';
export {
  ErrorClass,
  ErrorCode,
  errorClassOf,
  isNotFound,
  isPermanent,
  isQuotaExceeded,
  isTransient,
  NotFoundError,
  notFound,
  type Operation,
  PermanentError,
  ProviderError,
  type ProviderErrorOptions,
  permanent,
  providerError,
  QuotaExceededError,
  quotaExceeded,
  TransientError,
  toProviderError,
  transient,
} from './errors.js';
export { type IdFormat, idFormat } from './id.js';
export { type LogFn, type Logger, silentLogger, traceFields } from './logger.js';
export {
  adoptionProblem,
  belongsTo,
  DEFAULT_INSTALLATION,
  formatMark,
  formatMarkTime,
  installationProblem,
  MANAGED_VALUE,
  type Mark,
  MarkKey,
  parseMark,
  parseMarkTime,
} from './marks.js';
export {
  type Clock,
  ConfigError,
  type ConfigIssue,
  type ConfigOf,
  type ConfigResult,
  type ConfigSchema,
  createProvider,
  formatConfigIssues,
  type ProviderDeps,
  type ProviderModule,
  requireOneOf,
  systemClock,
  validateConfig,
} from './module.js';
export {
  Attr,
  defaultErrorFields,
  Metric,
  type ObserveSeamOptions,
  observe,
  observeSeam,
  SpanName,
  type Telemetry,
  withChildSpan,
} from './observe.js';
export { PROFILE_AXES, type Profile, profileProblems } from './profile.js';
export { type CheckedCreateRequest, checkCreateRequest, listInstallation } from './request.js';
export {
  type Checker,
  type CreateRequest,
  type Instance,
  type ListOptions,
  type Placement,
  type Provider,
  Reason,
  State,
  type TargetResult,
} from './types.js';
