/**
 * The proxy-op operator: reconciles Proxy resources into proxies, collects
 * orphans, reports provider health. Runs over a store (a folder of manifests
 * in standalone mode) and providers loaded from a providers file.
 *
 * @packageDocumentation
 */

export { canonicalJson } from './api/canonical-json.js';
export { getCondition, setCondition } from './api/conditions.js';
export { crdsYaml, customResourceDefinitions, toStructural } from './api/crds.js';
export { instanceName, MAX_INSTANCE_NAME } from './api/naming.js';
export {
  type PoolEndpoint,
  type PoolManifest,
  type PoolMetadata,
  type PoolObject,
  type PoolSpec,
  type PoolStatus,
  poolSpecSchema,
  poolStatusSchema,
  validatePoolManifest,
  validatePoolSpec,
} from './api/pool.js';
export { probeStatusSchema, remediationSchema } from './api/probe.js';
export {
  API_VERSION,
  type Condition,
  type ConditionType,
  FINALIZER,
  type FromSchema,
  formatProblems,
  GROUP,
  type Phase,
  type ProbeStatus,
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
} from './api/proxy.js';
export {
  type Credential,
  type CredentialRecord,
  GENERATED_ROUNDS,
} from './credentials/credential.js';
export { ROTATE_ANNOTATION } from './credentials/step.js';
export {
  isStatus,
  KubeApiError,
  KubeClient,
  type KubeClientOptions,
  type KubeRequest,
} from './kube/client.js';
export { credentialSecretName, SecretCredentialStore } from './kube/credentials.js';
export {
  LEADER_ELECTION_DEFAULTS,
  type LeaderElectionOptions,
  LeaderElector,
  microTime,
} from './kube/leader.js';
export { KubePoolStore, type KubePoolStoreOptions } from './kube/pools.js';
export { KubeStore, type KubeStoreOptions } from './kube/store.js';
export { EventLog, type EventLogOptions } from './page/events.js';
export {
  CONTENT_SECURITY_POLICY,
  type StatusPage,
  type StatusPageOptions,
  startStatusPage,
} from './page/server.js';
export type { PageProbes, StatusPageSource } from './page/snapshot.js';
export type { StreamOptions, StreamStats } from './page/stream.js';
export type { PageEvent, PageRole } from './page/wire.js';
export {
  membersOf,
  PoolController,
  type PoolControllerDeps,
  type PoolControllerOptions,
  templateHash,
} from './pool/controller.js';
export { type Member, type Plan, type PlanInput, planPool } from './pool/plan.js';
export { type ResolvedPoolSpec, resolvePoolSpec } from './pool/resolve.js';
export type { ProbeEntry, ProbeFailure, ProbeSeed, Verdict } from './probe/record.js';
export type { ShortCircuit } from './probe/remediation.js';
export {
  type DataPlaneView,
  ProbeScheduler,
  type ProbeSchedulerDeps,
  type ProbeSchedulerOptions,
  type RunningInstance,
} from './probe/scheduler.js';
export {
  type MaxUnhealthy,
  type ProbeSettings,
  parseProbeSettings,
} from './probe/settings.js';
export {
  type OwnProbeTarget,
  type ProbeTargetOptions,
  startProbeTarget,
} from './probe/target.js';
export { createLogger } from './process/log.js';
export { startTracing, type Tracing, tracingRequested } from './process/otel.js';
export {
  createPrometheusMetrics,
  type PrometheusMetrics,
  parseListenAddress,
  startHttpServer,
} from './process/telemetry.js';
export {
  DEFAULT_PROVIDER,
  defaultProvidersConfig,
  localStateDir,
  standaloneProviders,
} from './providers/default.js';
export {
  type FileStamp,
  fileStamp,
  loadProvidersFile,
  type ProviderEntry,
  type ProvidersConfig,
  type ProvidersLoad,
  parseProvidersConfig,
  watchProvidersFile,
} from './providers/file.js';
export {
  type AnyProviderModule,
  builtinProviders,
  FIRST_PARTY_PROVIDERS,
  ProviderRegistry,
  type RegistryEntry,
} from './providers/registry.js';
export {
  type ConfiguredProvider,
  ProviderSet,
  type ProvidersChange,
} from './providers/set.js';
export {
  type CloudInitAuth,
  type HashedAuth,
  renderCloudInit,
  renderSquidConfig,
  type SpecAuth,
  specHash,
} from './proxy/cloudinit.js';
export { Operator, type OperatorDeps, type OperatorOptions } from './proxy/controller.js';
export {
  collectAll,
  collectGarbage,
  type GcDeletion,
  type GcOptions,
  type GcReport,
} from './proxy/gc.js';
export { checkProvider, toProviderHealth } from './proxy/health.js';
export { Reconciler, type ReconcilerDeps, type ReconcilerOptions } from './proxy/reconciler.js';
export {
  Backoff,
  type BackoffOptions,
  type Handler,
  type ReconcileResult,
  TerminalError,
  WorkQueue,
  type WorkQueueOptions,
} from './runtime/queue.js';
export { FileCredentialStore } from './standalone/credentials.js';
export { validateManifestsDir } from './standalone/manifests.js';
export { StandalonePools } from './standalone/pools.js';
export {
  defaultStateFile,
  readStateFile,
  STATE_VERSION,
  type StateEntry,
  type StateFile,
} from './standalone/state-file.js';
export { type ScanReport, type StandaloneOptions, StandaloneStore } from './standalone/store.js';
export {
  type CredentialOwner,
  type CredentialStore,
  MemoryCredentialStore,
  type RefCredential,
} from './store/credentials.js';
export {
  MemoryPoolStore,
  ownerRefOf,
  POOL_LABEL,
  type PoolProxy,
  type PoolStore,
  type PublishedEndpoints,
  type PublishedUpstream,
  REMEDIATE_ANNOTATION,
  SKIP_REMEDIATION_ANNOTATION,
  TEMPLATE_HASH_LABEL,
  upstreamsText,
} from './store/pools.js';
export {
  type EventType,
  hookStore,
  MemoryStore,
  type ProxyStore,
  proxyKey,
  type StoreHooks,
  splitKey,
} from './store/proxies.js';
