/**
 * The proxy-op operator: reconciles Proxy and ProxyPool resources into
 * proxies through the configured providers, collects orphans, reports
 * provider health. Runs over a store chosen by the run mode: a folder of
 * manifests with a state file (standalone), or the Kubernetes API.
 *
 * This is the package's public surface, as its README's API section
 * documents it; everything else is internal.
 *
 * @packageDocumentation
 */

export { ROTATE_ANNOTATION } from './api/auth.js';
export { crdsYaml, customResourceDefinitions } from './api/crds.js';
export {
  POOL_LABEL,
  type PoolEndpoint,
  type PoolManifest,
  type PoolMetadata,
  type PoolObject,
  type PoolSpec,
  type PoolStatus,
  REMEDIATE_ANNOTATION,
  SKIP_REMEDIATION_ANNOTATION,
  TEMPLATE_HASH_LABEL,
  validatePoolManifest,
  validatePoolSpec,
} from './api/pool.js';
export {
  API_VERSION,
  type Condition,
  type ConditionType,
  FINALIZER,
  formatProblems,
  GROUP,
  type OwnerReference,
  type Phase,
  type ProbeStatus,
  type ProviderHealth,
  type ProviderHealthStatus,
  type ProxyManifest,
  type ProxyMetadata,
  type ProxyObject,
  type ProxySpec,
  type ProxyStatus,
  type SchemaProblem,
  type TargetHealth,
  type Validated,
  VERSION,
  validateProxyManifest,
  validateProxySpec,
} from './api/proxy.js';
export { main } from './cli/main.js';
export { DEFAULTS, type Defaults, type Settings } from './defaults.js';
export { OperatorError, OperatorErrorCode, TerminalError, UsageError } from './errors.js';
export { KubeApiError, KubeClient, type KubeClientOptions } from './kube/client.js';
export { SecretCredentialStore } from './kube/credentials.js';
export { KubePoolStore, type KubePoolStoreOptions } from './kube/pools.js';
export { KubeStore, type KubeStoreOptions } from './kube/store.js';
export { Operator, type OperatorOptions } from './manager/operator.js';
export {
  CONTENT_SECURITY_POLICY,
  type StatusPage,
  type StatusPageOptions,
  startStatusPage,
} from './page/server.js';
export type { PageRole } from './page/wire.js';
export {
  loadProvidersFile,
  type ProviderEntry,
  type ProvidersConfig,
  type ProvidersLoad,
  parseProvidersConfig,
} from './providers/file.js';
export { FIRST_PARTY_PROVIDERS, ProviderRegistry } from './providers/registry.js';
export { type ConfiguredProvider, ProviderSet, type ProvidersChange } from './providers/set.js';
export { type CloudInitAuth, renderCloudInit, renderSquidConfig } from './proxy/cloudinit.js';
export { FileCredentialStore } from './standalone/credentials.js';
export { type ScanReport, type StandaloneOptions, StandaloneStore } from './standalone/store.js';
export {
  type CredentialOwner,
  type CredentialStore,
  MemoryCredentialStore,
  type RefCredential,
} from './store/credentials.js';
export {
  MemoryPoolStore,
  type PoolProxy,
  type PoolStore,
  type PublishedEndpoints,
  type PublishedUpstream,
} from './store/pools.js';
export { type EventType, MemoryStore, type ProxyStore } from './store/proxies.js';
