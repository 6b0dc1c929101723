/**
 * Many egress addresses (`egress.addresses`): the set of source addresses
 * the proxy's connections leave from, an IPv6 prefix (a /64 a cloud gives
 * each server) and/or a list of addresses on the host. Each connection
 * takes one: the same for every connection of one session (a keyed hash
 * of the session id picks it), one at random for a connection without a
 * session.
 *
 * @module
 */

import { type Cidr, formatIp, type Ipv6, parseCidr, parseIp } from '@proxy-op/egress';
import { crypto } from './lazy-crypto.js';

/**
 * `egress.addresses` as it is written: one entry or a list of them. An
 * entry is an IPv4 address, an IPv6 address, or an IPv6 prefix of /48 to
 * /128 (`2001:db8:1::/64`); a list holds at most one prefix, and then no
 * other IPv6 address.
 */
export type EgressAddresses = string | readonly string[];

/** Most entries `egress.addresses` may list. */
export const MAX_EGRESS_ADDRESSES = 1024;

/** The shortest IPv6 prefix taken (the longest is /128, one address). */
export const MIN_EGRESS_PREFIX = 48;

/** The addresses of one family a connection may leave from. */
type Pool =
  | { readonly kind: 'list'; readonly addresses: readonly string[] }
  | { readonly kind: 'prefix'; readonly prefix: Cidr & { readonly family: 6 } };

/** An address family: 4 or 6. */
export type Family = 4 | 6;

/** The set `egress.addresses` names, read and checked. */
export interface EgressAddressSet {
  /** The families it has addresses of. */
  readonly families: readonly Family[];
  /**
   * An address of `family` to leave from: the one `session` hashes to, or
   * one at random without a session; undefined when the set has none of
   * that family.
   */
  pick(family: Family, session?: string): string | undefined;
}

const show = (v: unknown) =>
  typeof v === 'string' ? JSON.stringify(v.slice(0, 100)) : String(v).slice(0, 100);

/**
 * Every problem with `egress.addresses`, each naming its field and the
 * fix; empty when it is good (`undefined` is good: the option is off).
 * `outgoingAddress` is the proxy's other source option: the two together
 * are refused.
 */
export function egressAddressesProblems(
  value: unknown,
  outgoingAddress?: string,
  field = 'egress.addresses',
): string[] {
  if (value === undefined) return [];
  const problems: string[] = [];
  if (outgoingAddress !== undefined && outgoingAddress !== '') {
    problems.push(
      `${field}: cannot be used with outgoingAddress; drop outgoingAddress, or list that address in ${field}`,
    );
  }
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_EGRESS_ADDRESSES) {
    problems.push(
      `${field}: must be an IPv6 prefix such as "2001:db8:1::/64", or a list of 1 to ${MAX_EGRESS_ADDRESSES} addresses on the host (at most one of them an IPv6 prefix)`,
    );
    return problems;
  }
  const at = (i: number) => (typeof value === 'string' ? field : `${field}[${i}]`);
  const seen = new Set<string>();
  let prefixes = 0;
  let v6 = 0;
  list.forEach((entry: unknown, i) => {
    const problem = entryProblem(entry);
    if (problem !== undefined) {
      problems.push(`${at(i)}: ${show(entry)} ${problem}`);
      return;
    }
    const text = entry as string;
    if (text.includes('/')) prefixes++;
    else if (text.includes(':')) v6++;
    const key = text.includes('/')
      ? text
      : formatIp(parseIp(text) as NonNullable<ReturnType<typeof parseIp>>);
    if (seen.has(key)) problems.push(`${at(i)}: ${show(entry)} is listed twice; list it once`);
    seen.add(key);
  });
  if (prefixes > 1) {
    problems.push(`${field}: lists ${prefixes} IPv6 prefixes; give one (the host's /64, say)`);
  }
  if (prefixes === 1 && v6 > 0) {
    problems.push(
      `${field}: lists an IPv6 prefix and IPv6 addresses; give the prefix alone for IPv6 (IPv4 addresses may go beside it)`,
    );
  }
  return problems;
}

/** What is wrong with one entry (the text after its quoted value), or undefined. */
function entryProblem(entry: unknown): string | undefined {
  if (typeof entry !== 'string' || entry === '') {
    return 'is not an address or an IPv6 prefix; write 2001:db8:1::/64 or 192.0.2.10';
  }
  const slash = entry.indexOf('/');
  const addressText = slash < 0 ? entry : entry.slice(0, slash);
  const ip = parseIp(addressText);
  if (ip === undefined || addressText.startsWith('[')) {
    return 'is not an address or an IPv6 prefix; write 2001:db8:1::/64 or 192.0.2.10';
  }
  if (slash >= 0) {
    const bits = entry.slice(slash + 1);
    if (ip.family === 4) {
      return 'is an IPv4 range; list the IPv4 addresses the host has one by one (192.0.2.10, 192.0.2.11)';
    }
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > 128) {
      return 'has no valid prefix length; an IPv6 prefix is /48 to /128, such as 2001:db8:1::/64';
    }
    if (Number(bits) < MIN_EGRESS_PREFIX) {
      return `is shorter than /${MIN_EGRESS_PREFIX}; give the /48 to /128 prefix routed to this host`;
    }
    const cidr = parseCidr(entry) as Cidr;
    if (formatIp({ family: 6, words: (cidr as Ipv6).words }) !== formatIp(ip)) {
      return `has bits set past its prefix length; write ${formatIp({ family: 6, words: (cidr as Ipv6).words })}/${bits}`;
    }
  }
  const what = usable(ip.family === 4 ? ip.value : undefined, ip.family === 6 ? ip : undefined);
  return what === undefined ? undefined : `is ${what}; a connection cannot leave from it`;
}

/** Why an address cannot be a source (unspecified, multicast, broadcast), or undefined. */
function usable(v4: number | undefined, v6: Ipv6 | undefined): string | undefined {
  if (v4 !== undefined) {
    if (v4 === 0)
      return 'the unspecified address (leave egress.addresses out to let the system choose)';
    if (v4 >>> 28 === 0xe) return 'a multicast address';
    if (v4 === 0xffffffff) return 'the broadcast address';
    return undefined;
  }
  const w = (v6 as Ipv6).words;
  if (w.every((x) => x === 0)) {
    return 'the unspecified address (leave egress.addresses out to let the system choose)';
  }
  if (w[0] >>> 24 === 0xff) return 'a multicast address';
  return undefined;
}

/**
 * The set `value` names, or undefined when it is undefined (the option is
 * off). Throws a `TypeError` naming every problem (see
 * {@link egressAddressesProblems}).
 */
export function egressAddressSet(
  value: EgressAddresses | undefined,
  outgoingAddress?: string,
): EgressAddressSet | undefined {
  const problems = egressAddressesProblems(value, outgoingAddress);
  if (problems.length > 0) throw new TypeError(problems.join('\n'));
  if (value === undefined) return undefined;
  const v4: string[] = [];
  const v6: string[] = [];
  let prefix: (Cidr & { readonly family: 6 }) | undefined;
  for (const entry of typeof value === 'string' ? [value] : value) {
    if (entry.includes('/')) prefix = parseCidr(entry) as Cidr & { readonly family: 6 };
    else {
      const ip = parseIp(entry) as NonNullable<ReturnType<typeof parseIp>>;
      (ip.family === 4 ? v4 : v6).push(formatIp(ip));
    }
  }
  const pools = new Map<Family, Pool>();
  if (v4.length > 0) pools.set(4, { kind: 'list', addresses: v4 });
  if (prefix !== undefined) pools.set(6, { kind: 'prefix', prefix });
  else if (v6.length > 0) pools.set(6, { kind: 'list', addresses: v6 });
  // The hash key lives as long as the process: a session keeps its address while the proxy
  // runs, and nobody outside can tell which address a session id leads to. Made at the first
  // pick, so a proxy loads node:crypto only once it dials from the set.
  let key: Buffer | undefined;
  return {
    families: [...pools.keys()],
    pick(family, session) {
      const pool = pools.get(family);
      if (pool === undefined) return undefined;
      const c = crypto();
      key ??= c.randomBytes(32);
      const bits =
        session === undefined
          ? c.randomBytes(16)
          : c.createHmac('sha256', key).update(session, 'utf8').digest().subarray(0, 16);
      return pool.kind === 'list' ? fromList(pool.addresses, bits) : inPrefix(pool.prefix, bits);
    },
  };
}

/** The list's element that 16 bytes of hash or randomness choose. */
function fromList(addresses: readonly string[], bits: Buffer): string {
  const n = bits.readBigUInt64BE(0) % BigInt(addresses.length);
  return addresses[Number(n)] as string;
}

/**
 * The address in `prefix` whose host bits 16 bytes of hash or randomness
 * give. Never the prefix's first address (all host bits zero: the
 * subnet-router anycast address), except for a /128, which has no other.
 */
function inPrefix(prefix: Cidr & { readonly family: 6 }, bits: Buffer): string {
  const hostBits = 128 - prefix.prefix;
  if (hostBits === 0) return formatIp({ family: 6, words: prefix.words });
  const hostMask = (1n << BigInt(hostBits)) - 1n;
  let host = (bits.readBigUInt64BE(0) * (1n << 64n) + bits.readBigUInt64BE(8)) & hostMask;
  if (host === 0n) host = 1n;
  const w = prefix.words;
  const network =
    (BigInt(w[0]) << 96n) | (BigInt(w[1]) << 64n) | (BigInt(w[2]) << 32n) | BigInt(w[3]);
  const a = network | host;
  const word = (shift: bigint) => Number((a >> shift) & 0xffffffffn);
  return formatIp({ family: 6, words: [word(96n), word(64n), word(32n), word(0n)] });
}
