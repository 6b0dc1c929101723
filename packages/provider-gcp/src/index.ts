/**
 * `@proxy-op/provider-gcp`: the proxy-op provider for Google Compute
 * Engine, over `@google-cloud/compute`. The shared face of every provider
 * package, plus this provider's own API (README, API): the credentials
 * type and scope, and the backend errors found as a ProviderError's cause.
 *
 * @module
 */
export { COMPUTE_SCOPE, type GcpAuth } from './auth.js';
export { GcpReason } from './check.js';
export { classify } from './classify.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type GcpConfig,
  type GcpDeps,
  type GcpScheduling,
} from './config.js';
export { ComputeApiError, CredentialsError, OperationFailedError } from './errors.js';
export { formatId, type GcpId, parseId } from './id.js';
export { profile, providerModule } from './module.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
