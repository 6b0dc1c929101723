/**
 * The proxy-op operator: reconciles Proxy resources into proxies, collects
 * orphans, reports provider health. Runs over a store (a folder of manifests
 * in standalone mode) and providers loaded from a providers file.
 *
 * @packageDocumentation
 */
export { canonicalJson, renderCloudInit, renderSquidConfig, specHash } from './cloudinit.js';
export { getCondition, setCondition } from './conditions.js';
export { crdsYaml, customResourceDefinitions, toStructural } from './crds.js';
export {
  collectAll,
  collectGarbage,
  type GcDeletion,
  type GcOptions,
  type GcReport,
} from './gc.js';
export { checkProvider, toProviderHealth } from './health.js';
export {
  isStatus,
  KubeApiError,
  KubeClient,
  type KubeClientOptions,
  type KubeRequest,
} from './kube/client.js';
export {
  LEADER_ELECTION_DEFAULTS,
  type LeaderElectionOptions,
  LeaderElector,
  microTime,
} from './kube/leader.js';
export { KubeStore, type KubeStoreOptions } from './kube/store.js';
export { createLogger } from './log.js';
export { validateManifestsDir } from './manifests.js';
export { instanceName, MAX_INSTANCE_NAME } from './naming.js';
export { Operator, type OperatorDeps, type OperatorOptions } from './operator.js';
export { startTracing, type Tracing, tracingRequested } from './otel.js';
export {
  type AnyProviderModule,
  builtinProviders,
  type ConfiguredProvider,
  DEFAULT_PROVIDER,
  defaultProvidersConfig,
  FIRST_PARTY_PROVIDERS,
  loadProvidersFile,
  localStateDir,
  type ProviderEntry,
  ProviderRegistry,
  ProviderSet,
  type ProvidersChange,
  type ProvidersConfig,
  type ProvidersLoad,
  parseProvidersConfig,
  type RegistryEntry,
  standaloneProviders,
  watchProvidersFile,
} from './providers.js';
export {
  Backoff,
  type BackoffOptions,
  type Handler,
  type ReconcileResult,
  TerminalError,
  WorkQueue,
  type WorkQueueOptions,
} from './queue.js';
export { Reconciler, type ReconcilerDeps, type ReconcilerOptions } from './reconciler.js';
export {
  API_VERSION,
  type Condition,
  type ConditionType,
  FINALIZER,
  type FromSchema,
  formatProblems,
  GROUP,
  type Phase,
  type ProviderHealth,
  type ProviderHealthStatus,
  type ProxyManifest,
  type ProxyMetadata,
  type ProxyObject,
  type ProxySpec,
  type ProxyStatus,
  providerHealthStatusSchema,
  proxyManifestSchema,
  proxySpecSchema,
  proxyStatusSchema,
  type SchemaProblem,
  type TargetHealth,
  type Validated,
  VERSION,
  validateProxyManifest,
  validateProxySpec,
} from './schema.js';
export {
  defaultStateFile,
  readStateFile,
  type ScanReport,
  STATE_VERSION,
  type StandaloneOptions,
  StandaloneStore,
  type StateEntry,
  type StateFile,
} from './standalone.js';
export { type EventType, MemoryStore, type ProxyStore, proxyKey, splitKey } from './store.js';
export {
  createPrometheusMetrics,
  type PrometheusMetrics,
  parseListenAddress,
  startHttpServer,
} from './telemetry.js';
