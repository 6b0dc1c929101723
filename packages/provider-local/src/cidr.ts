/**
 * Source-address lists: CIDRs (IPv4 or IPv6) checked with `node:net`'s
 * BlockList.
 *
 * @module
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { cidrProblem } from '@proxy-op/contract/cidr';

/** A set of allowed source ranges. */
export interface SourceList {
  /** True when `address` (IPv4, IPv6 or IPv4-mapped IPv6) is inside one of the ranges. */
  allows(address: string | undefined): boolean;
}

/** Builds a {@link SourceList}; throws TypeError for an entry {@link cidrProblem} rejects. */
export function sourceList(cidrs: readonly string[]): SourceList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const problem = cidrProblem(cidr);
    if (problem !== undefined) throw new TypeError(`allowedSources: ${problem}`);
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

/** The IPv4 addresses of a loopback range for instances: no network, broadcast or 127.0.0.1. */
export function loopbackHosts(range: string): string[] {
  const [addr = '', prefixText = '32'] = range.split('/');
  const prefix = Number(prefixText);
  const base = ipv4ToInt(addr);
  const size = 2 ** (32 - prefix);
  const network = prefix === 32 ? base : base - (base % size);
  const out: string[] = [];
  for (let i = 0; i < size; i++) {
    if (size > 2 && (i === 0 || i === size - 1)) continue;
    const ip = intToIpv4(network + i);
    if (ip === '127.0.0.1') continue;
    out.push(ip);
  }
  return out;
}

/** Why `range` is not a loopback IPv4 range for instances, or undefined. */
export function loopbackRangeProblem(range: unknown): string | undefined {
  const problem = cidrProblem(range);
  if (problem !== undefined) return problem;
  const [addr = '', prefix = '32'] = (range as string).split('/');
  if (!isIPv4(addr)) return `"${String(range)}" is not an IPv4 range`;
  if (!addr.startsWith('127.') || Number(prefix) < 8) {
    return `"${String(range)}" is not inside 127.0.0.0/8`;
  }
  if (Number(prefix) < 16) return `"${String(range)}" is too large; use a prefix of 16 or more`;
  if (loopbackHosts(range as string).length === 0) return `"${String(range)}" has no usable host`;
  return undefined;
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}
