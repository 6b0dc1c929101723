/**
 * The libvirt provider engine of proxy-op: everything the libvirt
 * providers share (hosts over SSH, pooled connections, the image cache,
 * volumes, domain XML, addresses, the Checker), configured by a
 * {@link LibvirtFlavour}.
 *
 * @packageDocumentation
 */
export { clientSeam, type SshTransportOptions, sshTransport } from './adapter.js';
export { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
export { LibvirtReason } from './check.js';
export { classify } from './classify.js';
export {
  CONFIG_DEFAULTS,
  type HostConfig,
  type ImageEntry,
  type LibvirtConfig,
  type LibvirtDeps,
  libvirtConfigSchema,
  type MachineTypeEntry,
} from './config.js';
export {
  DialError,
  type DialStage,
  GuestProgramError,
  ImageError,
  MarkFormatError,
} from './errors.js';
export {
  type AddressSource,
  type ConfigCompat,
  escapeXml,
  type LibvirtFlavour,
  type MetadataNamespace,
  markElement,
  unescapeXml,
} from './flavour.js';
export { type DomainId, domainIds, formatId, parseId } from './id.js';
export { flavourProblems, libvirtProviderModule } from './module.js';
export {
  type DialTarget,
  type Domain,
  type DomainInterface,
  type HostKeyCheck,
  type LibvirtConnection,
  type LibvirtSeam,
  SEAM_METHODS,
  type StoragePool,
  type StoragePoolInfo,
  type StorageVol,
  type StorageVolInfo,
  type Transport,
} from './seam.js';
