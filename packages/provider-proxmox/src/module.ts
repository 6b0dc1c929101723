/**
 * The provider module: what the operator and `createProvider` load.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import { classify } from './classify.js';
import { configSchema, type ProxmoxConfig, type ProxmoxDeps } from './config.js';
import type { ProxmoxId } from './id.js';
import { createImplementation } from './implementation.js';

/** The provider's choices on the contract's axes (§4). */
export const profile: Profile = Object.freeze({
  readiness: 'provisioning-window',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'discovered',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'fail-whole',
  quota: 'absent',
  notFound: 'error-code',
  primaryKey: 'allocated-id',
  provisioningState: 'create-blocks',
  asyncOps: Object.freeze(['task-handle', 'backend-lock'] as const),
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'thin-client',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'transport-wrapper',
  backendTest: 'integration-env',
  credentialRotation: 'in-place',
  // Your own cluster: nothing is billed per VM, and nothing takes a VM back.
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
});

/**
 * The Proxmox VE provider module, type `proxmox`. Build a provider with
 * `createProvider(providerModule, name, config, deps)`.
 */
export const providerModule: ProviderModule<ProxmoxConfig, ProxmoxDeps, ProxmoxId> = Object.freeze<
  ProviderModule<ProxmoxConfig, ProxmoxDeps, ProxmoxId>
>({
  type: 'proxmox',
  configSchema,
  profile,
  classify,
  create: createImplementation,
});
