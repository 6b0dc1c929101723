/**
 * The proxy-op provider for Kubernetes: each proxy is a locked-down Squid
 * Pod, reached over `@kubernetes/client-node`.
 *
 * @packageDocumentation
 */

export { KubernetesReason } from './check.js';
export { classify } from './classify.js';
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
  type StatusDetails,
} from './errors.js';
export { formatId, type KubernetesId, parseId } from './id.js';
export { profile, providerModule } from './module.js';

import { providerModule } from './module.js';

export default providerModule;
