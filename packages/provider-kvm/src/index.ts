/**
 * The proxy-op provider for libvirt/KVM hosts over SSH (type `kvm`) that
 * keeps the original kvm provider's domains: its metadata element, its
 * config block and its profile, on the shared libvirt engine
 * `@proxy-op/libvirt-provider`.
 *
 * @packageDocumentation
 */
export {
  type Budgets,
  CONFIG_DEFAULTS,
  DEFAULT_BUDGETS,
  type DomainId as KvmId,
  formatId,
  type HostConfig,
  type ImageEntry,
  type LibvirtConfig as KvmConfig,
  type LibvirtDeps as KvmDeps,
  LibvirtReason as KvmReason,
  type MachineTypeEntry,
  parseId,
} from '@proxy-op/libvirt-provider';
export { kvmCompat } from './compat.js';
export {
  formatKvmMark,
  METADATA_ELEMENT,
  METADATA_PREFIX,
  METADATA_URI,
  parseKvmMark,
} from './metadata.js';
export { classify, configSchema, flavour, profile, providerModule } from './module.js';

import { providerModule } from './module.js';

export default providerModule;
