/**
 * The proxy-op provider for Proxmox VE: proxy VMs cloned from a template
 * over the PVE REST API.
 *
 * @packageDocumentation
 */
export { ApiError, CaFileError, TokenFileError } from './api.js';
export { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
export { ProxmoxReason } from './check.js';
export { classify, TaskFailedError, TaskTimeoutError } from './classify.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type MachineTypeEntry,
  type ProxmoxConfig,
  type TemplateEntry,
  type VmidRange,
} from './config.js';
export { formatId, parseId, type VmId } from './id.js';
export type { ProxmoxDeps } from './implementation.js';
export { profile, providerModule } from './module.js';
export { vmidFor } from './vmid.js';

import { providerModule } from './module.js';

export default providerModule;
