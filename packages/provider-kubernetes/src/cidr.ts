/**
 * CIDRs as the provider accepts them: an IPv4 or IPv6 address with a
 * prefix length, as Squid's `src` ACL reads them.
 *
 * @module
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Why `s` is not an IPv4 or IPv6 CIDR, or undefined when it is one. */
export function cidrProblem(s: string): string | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return `"${s}" has no prefix length (write it as a CIDR, such as 10.0.0.0/8)`;
  const address = s.slice(0, slash);
  const prefix = s.slice(slash + 1);
  const v4 = isIPv4(address);
  if (!v4 && !isIPv6(address)) return `"${s}" does not start with an IPv4 or IPv6 address`;
  const max = v4 ? 32 : 128;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > max) {
    return `"${s}" has a prefix length that is not 0 to ${max}`;
  }
  return undefined;
}
