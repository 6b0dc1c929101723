/**
 * The `local` provider as a provider module: what the operator and
 * `createProvider` load.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type LocalConfig, type LocalDeps } from './config.js';
import type { LocalId } from './id.js';
import { createImplementation } from './implementation.js';

/** The `local` provider's choices on the contract's axes (§4.1 to §4.23). */
export const profile: Profile = Object.freeze({
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'detected',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: Object.freeze([] as const),
  secondaryResources: 'explicit',
  credentials: 'none',
  clientKind: 'in-process',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
  credentialRotation: 'in-place',
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
});

/**
 * The `local` provider module, type `local`. Build a provider with
 * `createProvider(providerModule, name, config, deps)`.
 */
export const providerModule: ProviderModule<LocalConfig, LocalDeps, LocalId> = Object.freeze<
  ProviderModule<LocalConfig, LocalDeps, LocalId>
>({
  type: 'local',
  configSchema,
  profile,
  classify,
  create: createImplementation,
});
