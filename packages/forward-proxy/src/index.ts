/**
 * `@proxy-op/forward-proxy`: an HTTP/1.1 forward proxy on `node:net`
 * alone, to embed in a process of your own (`startForwardProxy`) or to run
 * as a program of its own (`proxyServerPath`, the package's `bin`).
 *
 * @module
 */

export {
  type HashOptions,
  hashPassword,
  type PasswordEntries,
  parsePasswordFile,
  verifyPassword,
} from '@proxy-op/htpasswd';
export type { AccessLogEntry } from './access-log.js';
export type { ProxyAuthOptions } from './auth.js';
export { type BanOptions, type BanRule, checkBanRules } from './bans.js';
export {
  type EgressAddresses,
  MAX_EGRESS_ADDRESSES,
  MIN_EGRESS_PREFIX,
} from './egress-addresses.js';
export { probeHealth } from './health.js';
export { DEFAULT_LIMITS, type ProxyLimits } from './limits.js';
export {
  LATENCY_BUCKETS_MS,
  type ParentOptions,
  type ParentProxy,
  type ParentStats,
  type SessionPolicy,
} from './parents.js';
export { readParentsFile, watchParentsFile } from './parents-file.js';
export {
  type ForwardProxy,
  type ForwardProxyEgress,
  type ForwardProxyOptions,
  startForwardProxy,
} from './proxy.js';
export { proxyServerPath } from './proxy-server.js';
export {
  DEFAULT_SESSION_TTL_MS,
  formatUserName,
  MAX_SESSION_TTL_MS,
  MIN_SESSION_TTL_MS,
  parseUserParams,
  splitUserName,
  type UserParams,
} from './user-params.js';
