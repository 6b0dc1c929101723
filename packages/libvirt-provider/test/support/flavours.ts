// Test flavours of the engine: one with kvm2's choices, one with the other
// branch of every axis the engine reads (submit, omit-unreachable, no quota,
// ARP first, orphaned volumes listed), so both sides of each run under the
// conformance suite.
import type { Profile } from '@proxy-op/contract';
import { type LibvirtFlavour, markElement } from '../../src/flavour.js';

export const BLOCKING_PROFILE: Profile = Object.freeze({
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
  asyncOps: [],
  secondaryResources: 'explicit',
  credentials: 'mounted-files',
  clientKind: 'rpc-over-ssh',
  timeouts: 'per-call',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
  billing: 'none',
  preemption: 'never',
  ipv6Egress: 'none',
});

/** Blocking Create, fail-whole listing, the quota precheck, the agent first. */
export const testFlavour: LibvirtFlavour = Object.freeze<LibvirtFlavour>({
  type: 'testvirt',
  prefix: 'testvirt',
  instrumentation: '@proxy-op/libvirt-provider/test',
  metadata: markElement({
    uri: 'https://proxy-op.dev/xmlns/testvirt/1',
    prefix: 'tv',
    element: 'instance',
  }),
  profile: BLOCKING_PROFILE,
  addressSources: ['agent', 'lease', 'arp'],
});

/** Submit Create, hosts left out of the listing when unreachable, no quota class, ARP first, orphaned volumes listed. */
export const otherFlavour: LibvirtFlavour = Object.freeze<LibvirtFlavour>({
  type: 'othervirt',
  prefix: 'othervirt',
  instrumentation: '@proxy-op/libvirt-provider/test',
  metadata: markElement({
    uri: 'https://proxy-op.dev/xmlns/othervirt/1',
    prefix: 'ov',
    element: 'owner',
  }),
  profile: Object.freeze({
    ...BLOCKING_PROFILE,
    createReturn: 'submit',
    listPartial: 'omit-unreachable',
    quota: 'absent',
  }),
  addressSources: ['arp', 'agent'],
  listOrphanVolumes: true,
});
