/**
 * The `gcp` provider as a provider module: type, config schema, profile,
 * classify. Both the profile and the module are frozen.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type GcpConfig, type GcpDeps } from './config.js';
import type { GcpId } from './id.js';
import { createImplementation } from './implementation.js';

/** The `gcp` provider's choices on the contract's axes (§4). */
export const profile: Profile = Object.freeze({
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
  asyncOps: Object.freeze(['task-handle'] as const),
  secondaryResources: 'explicit',
  credentials: 'environment',
  clientKind: 'vendor-sdk',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'integration-env',
  credentialRotation: 'replace',
  // Per second, with a one-minute minimum; the price per hour is the operator's to configure.
  billing: Object.freeze({ period: 'second', minimumSeconds: 60 } as const),
  preemption: 'possible',
  ipv6Egress: 'none',
});

/** The `gcp` provider module (type `gcp`). Build a provider with `createProvider(providerModule, name, config, deps)`. */
export const providerModule: ProviderModule<GcpConfig, GcpDeps, GcpId> = Object.freeze<
  ProviderModule<GcpConfig, GcpDeps, GcpId>
>({
  type: 'gcp',
  configSchema,
  profile,
  classify,
  create: createImplementation,
});
