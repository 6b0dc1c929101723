/**
 * Source-address lists: CIDRs (IPv4 or IPv6) checked with `node:net`'s
 * BlockList.
 *
 * @module
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { cidrOf, formatCidr, formatIp, parseIp } from '@proxy-op/egress';

/**
 * What one source is, for the bounds kept per source (open connections,
 * failed credentials): an IPv4 address (an IPv4-mapped one as IPv4), or
 * the /64 an IPv6 address is in, since one host usually holds a whole /64.
 */
export function sourceKey(address: string | undefined): string {
  if (address === undefined) return '';
  const ip = parseIp(address);
  if (ip === undefined || ip.family === 4) return address;
  const [a, b, c, d] = ip.words;
  if (a === 0 && b === 0 && c === 0xffff) return formatIp({ family: 4, value: d });
  return formatCidr(cidrOf(ip, 64));
}

/** A set of allowed source ranges. */
export interface SourceList {
  /** True when `address` (IPv4, IPv6 or IPv4-mapped IPv6) is inside one of the ranges. */
  allows(address: string | undefined): boolean;
}

/**
 * Builds a {@link SourceList}; throws TypeError naming `field` for an
 * entry that is no CIDR or address.
 */
export function sourceList(cidrs: readonly string[], field = 'allowedSources'): SourceList {
  const list = new BlockList();
  if (!Array.isArray(cidrs)) throw new TypeError(`${field}: must be a list of CIDRs`);
  for (const cidr of cidrs) {
    const problem = cidrProblem(cidr);
    if (problem !== undefined) throw new TypeError(`${field}: ${problem}`);
    const [addr = '', prefix] = cidr.split('/');
    const type = isIPv4(addr) ? 'ipv4' : 'ipv6';
    list.addSubnet(
      addr,
      prefix === undefined ? (type === 'ipv4' ? 32 : 128) : Number(prefix),
      type,
    );
  }
  return {
    allows(address) {
      if (address === undefined) return false;
      const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
      const a = mapped?.[1] ?? address;
      if (isIPv4(a)) return list.check(a, 'ipv4');
      if (isIPv6(a)) return list.check(a, 'ipv6');
      return false;
    },
  };
}

/**
 * Why `cidr` is not a CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a bare
 * address, or undefined when it is one. The same rule and words as the
 * provider contract's `cidrProblem`, which this package does not depend on.
 */
function cidrProblem(cidr: unknown): string | undefined {
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
