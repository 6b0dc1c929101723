/**
 * The `hetzner` provider as a provider module: type, config schema,
 * profile, classify. Both the profile and the module are frozen.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type HetznerConfig, type HetznerDeps } from './config.js';
import type { HetznerId } from './id.js';
import { createImplementation } from './implementation.js';

/** The `hetzner` provider's choices on the contract's axes (§4). */
export const profile: Profile = Object.freeze({
  readiness: 'provisioning-window',
  createReturn: 'submit',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'native-labels',
  createdAt: 'backend-timestamp',
  listPartial: 'fail-whole',
  quota: 'detected',
  notFound: 'list-and-miss',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: Object.freeze(['backend-lock'] as const),
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'thin-client',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'integration-env',
  credentialRotation: 'replace',
  // Each started hour, at least one; the price per hour is the operator's to configure.
  billing: Object.freeze({ period: 'hour', minimumSeconds: 3600 } as const),
  preemption: 'never',
  ipv6Egress: 'range',
});

/** The `hetzner` provider module (type `hetzner`). Build a provider with `createProvider(providerModule, name, config, deps)`. */
export const providerModule: ProviderModule<HetznerConfig, HetznerDeps, HetznerId> = Object.freeze<
  ProviderModule<HetznerConfig, HetznerDeps, HetznerId>
>({
  type: 'hetzner',
  configSchema,
  profile,
  classify,
  create: createImplementation,
});
