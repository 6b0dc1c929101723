/**
 * kvm2 on the libvirt engine: its metadata namespace, its profile, its
 * (empty) config compatibility layer and its span and log prefix. Every
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
  markElement,
} from '@proxy-op/libvirt-provider';

/** The namespace of kvm2's mark in a domain's `<metadata>`. */
export const METADATA_URI = 'https://proxy-op.dev/xmlns/kvm2/1';

/** kvm2's choices on the contract's axes (§4.1 to §4.23). */
export const profile: Profile = Object.freeze({
  readiness: 'provisioning-window',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'discovered',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'fail-whole',
  quota: 'detected',
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

/** kvm2 as the engine sees it. */
export const flavour: LibvirtFlavour = Object.freeze<LibvirtFlavour>({
  type: 'kvm2',
  prefix: 'kvm2',
  instrumentation: '@proxy-op/provider-kvm2',
  metadata: markElement({ uri: METADATA_URI, prefix: 'kvm2', element: 'instance' }),
  profile,
  addressSources: Object.freeze(['agent', 'lease', 'arp'] as const),
});

/**
 * The kvm2 provider module, type `kvm2`. Build a provider with
 * `createProvider(providerModule, name, config, deps)`.
 */
export const providerModule: ProviderModule<LibvirtConfig, LibvirtDeps, DomainId> =
  libvirtProviderModule(flavour);

/** The `kvm2` config block's schema. */
export const configSchema = providerModule.configSchema;

export { classify };
