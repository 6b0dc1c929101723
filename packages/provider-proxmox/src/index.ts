/**
 * The proxy-op provider for Proxmox VE: proxy VMs cloned from a template
 * over the PVE REST API.
 *
 * @packageDocumentation
 */
export {
  type AgentInterface,
  API_METHODS,
  ApiError,
  CaFileError,
  type CloneParams,
  type ProxmoxApi,
  type ResourceEntry,
  type StorageStatus,
  type TaskRef,
  type TaskStatus,
  TokenFileError,
  type VmConfig,
  type VmRef,
  type VmStatus,
} from './api.js';
export { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
export { classify, TaskFailedError, TaskTimeoutError } from './classify.js';
export {
  CONNECT_TIMEOUT_MS,
  CONNECTIONS_PER_HOST,
  type HttpApiOptions,
  HttpProxmoxApi,
  readToken,
  type Token,
  tracingInterceptor,
} from './client.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type MachineTypeEntry,
  type ProxmoxConfig,
  type TemplateEntry,
  type VmidRange,
  validateProxmoxConfig,
} from './config.js';
export { bootDisk, rewriteNet0 } from './disk.js';
export { formatId, parseId, type VmId } from './id.js';
export { formatDescription, PROXY_TAG, parseDescription } from './mark.js';
export { profile, providerModule } from './module.js';
export {
  decorateApi,
  firstRoutableIPv4,
  mapStatus,
  type ProxmoxDeps,
  ProxmoxProvider,
  ProxmoxReason,
  seedName,
  seedVolid,
} from './provider.js';
export { fnv1a64, MAX_PROBES, vmidFor } from './vmid.js';

import { providerModule } from './module.js';

export default providerModule;
