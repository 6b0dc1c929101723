/**
 * `@proxy-op/provider-local`: the proxy-op provider that runs each proxy as
 * a local process on its own loopback address. The shared face of every
 * provider package, plus this provider's own API (README, API): the
 * backend error found as a ProviderError's cause.
 *
 * @module
 */
export { LocalReason } from './check.js';
export { classify } from './classify.js';
export { CONFIG_DEFAULTS, configSchema, type LocalConfig, type LocalDeps } from './config.js';
export { LocalError } from './errors.js';
export { formatId, type LocalId, parseId } from './id.js';
export { profile, providerModule } from './module.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
