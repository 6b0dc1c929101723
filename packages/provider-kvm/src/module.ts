/**
 * kvm on the libvirt engine: the original kvm provider's metadata element
 * and config block, its profile (the ARP table before the guest agent, a
 * blocking Create, a listing that fails whole, no quota class), orphaned
 * volumes in the listing, and the span and log prefix `kvm`. Every
 * behaviour lives in `@proxy-op/libvirt-provider`.
 *
 * @module
 */
import type { Profile, ProviderModule } from '@proxy-op/contract';
import {
  classify,
  type DomainId,
  type LibvirtConfig,
  type LibvirtDeps,
  type LibvirtFlavour,
  libvirtProviderModule,
} from '@proxy-op/libvirt-provider';
import { kvmCompat } from './compat.js';
import { kvmMetadata } from './metadata.js';

/** kvm's choices on the contract's axes (§4.1 to §4.23). */
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
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: Object.freeze([] as const),
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'rpc-over-ssh',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  credentialRotation: 'in-place',
  backendTest: 'local-peer',
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
});

/** kvm as the engine sees it. */
export const flavour: LibvirtFlavour = Object.freeze<LibvirtFlavour>({
  type: 'kvm',
  prefix: 'kvm',
  instrumentation: '@proxy-op/provider-kvm',
  metadata: kvmMetadata,
  profile,
  addressSources: Object.freeze(['arp', 'agent'] as const),
  compat: kvmCompat,
  listOrphanVolumes: true,
});

/**
 * The kvm provider module, type `kvm`. Build a provider with
 * `createProvider(providerModule, name, config, deps)`.
 */
export const providerModule: ProviderModule<LibvirtConfig, LibvirtDeps, DomainId> =
  libvirtProviderModule(flavour);

/** The `kvm` config block's schema. */
export const configSchema = providerModule.configSchema;

export { classify };
