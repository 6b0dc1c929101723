/**
 * The proxy-op provider for libvirt/KVM hosts over SSH (type `kvm2`): proxy
 * VMs booted from a cached image with a NoCloud seed, on the shared libvirt
 * engine `@proxy-op/libvirt-provider`.
 *
 * @packageDocumentation
 */
export {
  type Budgets,
  CONFIG_DEFAULTS,
  DEFAULT_BUDGETS,
  type DomainId as Kvm2Id,
  formatId,
  type HostConfig,
  type ImageEntry,
  type LibvirtConfig as Kvm2Config,
  type LibvirtDeps as Kvm2Deps,
  LibvirtReason as Kvm2Reason,
  type MachineTypeEntry,
  parseId,
} from '@proxy-op/libvirt-provider';
export {
  classify,
  configSchema,
  flavour,
  METADATA_URI,
  profile,
  providerModule,
} from './module.js';

import { providerModule } from './module.js';

export default providerModule;
