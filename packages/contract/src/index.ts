/**
 * The proxy-op provider contract.
 *
 * @packageDocumentation
 */
export {
  abortable,
  abortedError,
  type CallOptions,
  raceAbort,
  sleep,
  throwIfAborted,
} from './abort.js';
export { BackendError, type BackendErrorOptions } from './backend-error.js';
export { billedSeconds, costOf, locationProblems, paidUntil } from './billing.js';
export { BudgetError, budgetSeam, type SeamBudget } from './budget.js';
export type {
  CheckAnswer,
  CheckContext,
  CheckTarget,
  ImplementationChecker,
} from './checker.js';
export { cidrProblem } from './cidr.js';
export type { DeleteContext, OperationContext, ShellOperation } from './context.js';
export {
  ErrorClass,
  ErrorCode,
  errorClassOf,
  isNotFound,
  isPermanent,
  isQuotaExceeded,
  isTransient,
  MalformedAnswerError,
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
export { type FunnelOptions, isMalformedAnswer, toOperationError } from './funnel.js';
export { type IdFormat, idFormat } from './id.js';
export { type LogFn, type Logger, silentLogger, traceFields } from './logger.js';
export {
  adoptionProblem,
  belongsTo,
  DEFAULT_INSTALLATION,
  deletionProblem,
  formatMark,
  formatMarkTime,
  formatOwnerMark,
  installationProblem,
  MANAGED_VALUE,
  type Mark,
  MarkKey,
  markedInstances,
  parseMark,
  parseMarkTime,
  parseOwnerMark,
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
  type ShellDeps,
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
export { bindOperations, type ImplementationParts, type Operations } from './operations.js';
export {
  type Billing,
  billingOf,
  credentialRotationOf,
  ipv6EgressOf,
  PROFILE_AXES,
  type Profile,
  preemptionOf,
  profileProblems,
} from './profile.js';
export {
  type CheckedCreateRequest,
  checkCreateRequest,
  checkProxyAuth,
  listInstallation,
} from './request.js';
export {
  encodedForms,
  MIN_SECRET_LENGTH,
  REDACTED,
  redactingLogger,
  SecretSet,
} from './secrets.js';
export {
  type IdParser,
  operationShell,
  type ProviderImplementation,
  type ShellOptions,
} from './shell.js';
export { TLS_VERIFY_CODES, tlsVerifyError } from './tls.js';
export {
  type Checker,
  type CreateRequest,
  type DeleteOptions,
  type Instance,
  type ListOptions,
  type Location,
  type Placement,
  type Provider,
  type ProxyAuth,
  Reason,
  State,
  type TargetResult,
} from './types.js';
