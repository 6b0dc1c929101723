/**
 * The `local` provider as a provider module: type, config schema, profile.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { type LocalConfig, localConfigSchema } from './config.js';
import { LocalProvider, type LocalProviderDeps } from './provider.js';

/** The `local` provider's choices on the contract's axes (§4). */
export const localProfile: Profile = {
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
export const providerModule: ProviderModule<LocalConfig, LocalProviderDeps> = {
  type: 'local',
  configSchema: localConfigSchema,
  profile: localProfile,
  create: (name, config, deps) => new LocalProvider(name, config, deps ?? {}),
};
