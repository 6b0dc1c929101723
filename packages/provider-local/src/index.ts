/**
 * `@proxy-op/provider-local`: the proxy-op provider that runs each proxy as
 * a local process on its own loopback address.
 *
 * @module
 */
export { loopbackHosts } from './cidr.js';
export { classify } from './classify.js';
export {
  configSchema,
  DEFAULT_TIMEOUTS,
  type LocalConfig,
  type LocalTimeouts,
  localDefaults,
} from './config.js';
export { profile, providerModule } from './module.js';
export {
  type LocalId,
  type LocalProviderDeps,
  LocalReason,
  localId,
  localStatePath,
} from './provider.js';
export {
  type AccessLogEntry,
  DEFAULT_LIMITS,
  type ForwardProxy,
  type ForwardProxyOptions,
  type ProxyLimits,
  startForwardProxy,
} from './proxy.js';
export {
  createProcessSeam,
  type InstanceRecord,
  LocalError,
  type LocalSeam,
  type Phase,
  proxyProgramPath,
} from './seam.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
