/**
 * The `local` provider as a provider module: type, config schema, profile,
 * classify.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type LocalConfig } from './config.js';
import { type LocalId, LocalImplementation, type LocalProviderDeps } from './provider.js';

/** The `local` provider's choices on the contract's axes (§4). */
export const profile: Profile = {
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
  asyncOps: [],
  secondaryResources: 'explicit',
  credentials: 'none',
  clientKind: 'in-process',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
};

/** The `local` provider module (type `local`). */
export const providerModule: ProviderModule<LocalConfig, LocalProviderDeps, LocalId> = {
  type: 'local',
  configSchema,
  profile,
  classify,
  create: (name, config, deps) => new LocalImplementation(name, config, deps),
};
