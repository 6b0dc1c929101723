/**
 * The `gcp` provider as a provider module: type, config schema, profile,
 * classify.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { configSchema, type GcpConfig } from './config.js';
import { classify } from './errors.js';
import type { GcpId } from './ids.js';
import { GcpImplementation, type GcpProviderDeps } from './provider.js';

/** The `gcp` provider's choices on the contract's axes (§4). */
export const profile: Profile = {
  readiness: 'provisioning-window',
  createReturn: 'submit',
  deleteReturn: 'returns-early',
  ipSource: 'assigned-at-create',
  gcMark: 'native-labels',
  createdAt: 'backend-timestamp',
  listPartial: 'omit-unreachable',
  quota: 'detected',
  notFound: 'status-404',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: ['task-handle'],
  secondaryResources: 'explicit',
  credentials: 'environment',
  clientKind: 'vendor-sdk',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'integration-env',
};

/** The `gcp` provider module (type `gcp`). */
export const providerModule: ProviderModule<GcpConfig, GcpProviderDeps, GcpId> = {
  type: 'gcp',
  configSchema,
  profile,
  classify,
  create: (name, config, deps) => new GcpImplementation(name, config, deps),
};
