/**
 * The proxy-op provider for Proxmox VE: proxy VMs cloned from a template
 * over the PVE REST API.
 *
 * @packageDocumentation
 */
export { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
export { ProxmoxReason } from './check.js';
export { classify } from './classify.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type MachineTypeEntry,
  type ProxmoxConfig,
  type ProxmoxDeps,
  type TemplateEntry,
  type VmidRange,
} from './config.js';
export {
  ApiError,
  CaFileError,
  TaskFailedError,
  TaskTimeoutError,
  TokenFileError,
} from './errors.js';
export { formatId, type ProxmoxId, parseId } from './id.js';
export { profile, providerModule } from './module.js';
export { vmidFor } from './vmid.js';

import { providerModule } from './module.js';

export default providerModule;
