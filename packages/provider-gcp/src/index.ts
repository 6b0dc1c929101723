/**
 * `@proxy-op/provider-gcp`: the proxy-op provider for Google Compute
 * Engine, over `@google-cloud/compute`.
 *
 * @module
 */
export { COMPUTE_SCOPE, type GcpAuth } from './adapter.js';
export {
  buildFirewallBody,
  buildInsertBody,
  firewallMark,
  firewallName,
  USER_DATA_KEY,
} from './build.js';
export { GcpReason } from './check.js';
export {
  configSchema,
  GCP_DEFAULTS,
  type GcpConfig,
  type GcpFirewall,
  type GcpTimeouts,
  regionOf,
  UBUNTU_2404,
} from './config.js';
export { MAX_USER_DATA_BYTES } from './create.js';
export {
  ComputeApiError,
  CredentialsError,
  classify,
  OperationFailedError,
  operationErrorClass,
} from './errors.js';
export { formatId, type GcpId, gcpId, parseId } from './ids.js';
export { labelValueProblem, MANAGED_FILTER, markLabels } from './labels.js';
export { profile, providerModule } from './module.js';
export type { GcpProviderDeps } from './provider.js';
export type {
  ComputeSeam,
  FirewallBody,
  FirewallView,
  InstanceBody,
  InstanceView,
  ListedInstances,
  OperationErrorItem,
  OperationView,
} from './seam.js';
export { addressOf, mapState } from './state.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
