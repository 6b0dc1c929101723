/**
 * The `aws` provider as a provider module: type, config schema, profile,
 * classify. Both the profile and the module are frozen.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { type AwsConfig, type AwsDeps, configSchema } from './config.js';
import type { AwsId } from './id.js';
import { createImplementation } from './implementation.js';

/** The `aws` provider's choices on the contract's axes (§4). */
export const profile: Profile = Object.freeze({
  readiness: 'provisioning-window',
  createReturn: 'submit',
  deleteReturn: 'returns-early',
  ipSource: 'assigned-at-create',
  gcMark: 'native-labels',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'detected',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: Object.freeze([] as const),
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'vendor-sdk',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'integration-env',
  credentialRotation: 'replace',
  // Per second, with a one-minute minimum (Linux On-Demand and Spot); the price is the operator's to configure.
  billing: Object.freeze({ period: 'second', minimumSeconds: 60 } as const),
  preemption: 'possible',
  ipv6Egress: 'none',
});

/** The `aws` provider module (type `aws`). Build a provider with `createProvider(providerModule, name, config, deps)`. */
export const providerModule: ProviderModule<AwsConfig, AwsDeps, AwsId> = Object.freeze<
  ProviderModule<AwsConfig, AwsDeps, AwsId>
>({
  type: 'aws',
  configSchema,
  profile,
  classify,
  create: createImplementation,
});
