/**
 * The proxy-op provider for Kubernetes: each proxy is a locked-down Squid
 * Pod, reached over `@kubernetes/client-node`.
 *
 * @packageDocumentation
 */

export { renderSquidConfig, type SquidPaths, type SquidSettings } from '@proxy-op/squid-config';
export { classify, KubernetesReason } from './classify.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type ImageEntry,
  type KubernetesConfig,
  type KubernetesDeps,
  type MachineTypeEntry,
} from './config.js';
export {
  CredentialsError,
  KubernetesApiError,
  KubernetesConnectionError,
  KubernetesTimeoutError,
  type StatusDetails,
} from './errors.js';
export { formatId, type PodId, parseId } from './id.js';
export { profile, providerModule } from './module.js';

import { providerModule } from './module.js';

export default providerModule;
