/**
 * The provider module: what the operator and `createProvider` load.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type KubernetesConfig, type KubernetesDeps } from './config.js';
import type { KubernetesId } from './id.js';
import { createImplementation } from './implementation.js';

/** The provider's choices on the contract's axes (§4.1 to §4.23). */
export const profile: Profile = Object.freeze({
  readiness: 'provisioning-window',
  createReturn: 'submit',
  deleteReturn: 'returns-early',
  ipSource: 'assigned-at-create',
  gcMark: 'native-labels',
  createdAt: 'backend-timestamp',
  listPartial: 'single-call',
  quota: 'detected',
  notFound: 'status-404',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: Object.freeze([] as const),
  secondaryResources: 'cascade',
  credentials: 'mounted-files',
  clientKind: 'vendor-sdk',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'integration-env',
  credentialRotation: 'in-place',
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
});

/**
 * The Kubernetes provider module, type `kubernetes`. Build a provider with
 * `createProvider(providerModule, name, config, deps)`.
 */
export const providerModule: ProviderModule<KubernetesConfig, KubernetesDeps, KubernetesId> =
  Object.freeze<ProviderModule<KubernetesConfig, KubernetesDeps, KubernetesId>>({
    type: 'kubernetes',
    configSchema,
    profile,
    classify,
    create: createImplementation,
  });
