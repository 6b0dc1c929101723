/**
 * `@proxy-op/provider-hetzner`: the proxy-op provider for Hetzner Cloud,
 * over its REST API with undici. The shared face of every provider
 * package, plus this provider's own API (README, API): the config blocks'
 * parts and the backend errors found as a ProviderError's cause.
 *
 * @module
 */
export { HetznerReason } from './check.js';
export { classify } from './classify.js';
export {
  CONFIG_DEFAULTS,
  configSchema,
  type HetznerConfig,
  type HetznerDeps,
  type HetznerFirewall,
} from './config.js';
export {
  HetznerApiError,
  type InvalidField,
  type RateLimit,
  TokenError,
  TransportError,
} from './errors.js';
export { formatId, type HetznerId, parseId } from './id.js';
export { profile, providerModule } from './module.js';
export type { HetznerTimeouts } from './seam.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
