/**
 * Source networks as Squid's `src` ACL holds them.
 *
 * @module
 */
import { isIPv4 } from 'node:net';

/** The CIDR of `source`: a bare address gets its full prefix (`/32`, `/128`). */
export function withPrefix(source: string): string {
  if (source.includes('/')) return source;
  return `${source}/${isIPv4(source) ? 32 : 128}`;
}

/** A CIDR in the 128-bit space Squid matches in (IPv4 as IPv4-mapped IPv6, `::ffff:a.b.c.d`). */
interface Range {
  readonly bits: bigint;
  readonly prefix: number;
}

function ipv4Bits(a: string): bigint {
  return a.split('.').reduce((n, octet) => (n << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Bits(a: string): bigint {
  // An embedded IPv4 tail (`::ffff:10.0.0.1`) becomes its two hex groups first.
  const text = a.replace(/(\d+\.\d+\.\d+\.\d+)$/, (v4) => {
    const n = ipv4Bits(v4);
    return `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  });
  const [head = '', tail] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => BigInt(`0x${g}`)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const words = [...left, ...Array<bigint>(8 - left.length - right.length).fill(0n), ...right];
  return words.reduce((n, w) => (n << 16n) | w, 0n);
}

function toRange(cidr: string): Range {
  const [address = '', prefix = '0'] = cidr.split('/');
  if (isIPv4(address))
    return { bits: (0xffffn << 32n) | ipv4Bits(address), prefix: 96 + Number(prefix) };
  return { bits: ipv6Bits(address), prefix: Number(prefix) };
}

function covers(a: Range, b: Range): boolean {
  if (a.prefix > b.prefix) return false;
  const shift = BigInt(128 - a.prefix);
  return a.bits >> shift === b.bits >> shift;
}

/**
 * The CIDRs as Squid can hold them in one `src` ACL: a prefix of 0 (which
 * Squid refuses, asking for `all`) written as the address family's two
 * halves, and every CIDR another one covers left out. Squid keeps one of
 * two overlapping networks and ignores the other, and which one depends
 * on their order: listed narrow first, the wider network is the one lost.
 * Squid matches IPv4 clients as IPv4-mapped IPv6 addresses, so an IPv6
 * network that covers `::ffff:0:0/96` (such as `::/0`) takes in IPv4
 * clients too. The order of what is kept is the order given.
 */
export function squidSourceList(cidrs: readonly string[]): string[] {
  const expanded = cidrs.flatMap((cidr) => {
    const [address = '', prefix] = cidr.split('/');
    if (prefix !== '0') return [cidr];
    return isIPv4(address) ? ['0.0.0.0/1', '128.0.0.0/1'] : ['::/1', '8000::/1'];
  });
  const ranges = expanded.map(toRange);
  return expanded.filter((_cidr, i) =>
    ranges.every((other, j) => {
      if (j === i) return true;
      const me = ranges[i] as Range;
      if (!covers(other, me)) return true;
      // Equal networks: the first one stays.
      return covers(me, other) && i < j;
    }),
  );
}
