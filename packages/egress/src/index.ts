/**
 * `@proxy-op/egress`: one destination policy for egress proxies (which
 * addresses, names and ports a proxy may reach), with safe defaults, read
 * and checked once and used by both the forward proxy and the Squid
 * configuration.
 *
 * @module
 */
export {
  DEFAULT_CONNECT_PORTS,
  DEFAULT_HTTP_PORTS,
  DEFAULT_REFUSED_RANGES,
  type RefusalRule,
  type RefusedRange,
} from './defaults.js';
export {
  type EgressEntry,
  formatPorts,
  normalizeHostName,
  type PortRange,
  type PortSpec,
  parseEgressEntry,
  parsePortSpec,
} from './entry.js';
export {
  addressForms,
  type Cidr,
  carrierCidrs,
  cidrContains,
  cidrCovers,
  cidrOf,
  embeddedIpv4,
  formatCidr,
  formatIp,
  type IpAddress,
  type Ipv4,
  type Ipv6,
  parseCidr,
  parseInetAton,
  parseIp,
} from './ip.js';
export {
  compileEgressPolicy,
  type EgressKind,
  type EgressMatcher,
  type EgressOptions,
  type ListeningAddress,
} from './matcher.js';
export { type EgressPolicy, egressPolicyProblems, MAX_ENTRIES } from './policy.js';
