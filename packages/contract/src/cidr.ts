/**
 * CIDR checks for the sources a proxy allows.
 *
 * @module
 */
import { isIPv4, isIPv6 } from 'node:net';

/**
 * Why `cidr` is not a CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a bare
 * address, or undefined when it is one.
 */
export function cidrProblem(cidr: unknown): string | undefined {
  if (typeof cidr !== 'string') return 'must be a string';
  const [addr = '', prefix, ...rest] = cidr.split('/');
  if (rest.length > 0) return `"${cidr}" is not a CIDR (address/prefix)`;
  const v4 = isIPv4(addr);
  if (!v4 && !isIPv6(addr)) return `"${cidr}" does not start with an IPv4 or IPv6 address`;
  if (prefix === undefined) return undefined;
  const max = v4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) {
    return `"${cidr}" has a prefix length that is not 0 to ${max}`;
  }
  return undefined;
}
