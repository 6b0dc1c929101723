/**
 * A destination policy compiled once and asked for every request: before
 * resolution with the host a request names ({@link EgressMatcher.checkHost}),
 * then with each address the host resolves to, which is the address the
 * proxy dials ({@link EgressMatcher.checkAddress}).
 *
 * @module
 */
import {
  DEFAULT_CONNECT_PORTS,
  DEFAULT_HTTP_PORTS,
  DEFAULT_REFUSED_RANGES,
  type RefusalRule,
} from './defaults.js';
import {
  type EgressEntry,
  entryAdmitsPort,
  entryMatchesName,
  normalizeHostName,
  type PortRange,
  parseEgressEntry,
  parsePortSpec,
} from './entry.js';
import {
  addressForms,
  type Cidr,
  cidrContains,
  cidrCovers,
  formatIp,
  type IpAddress,
  parseCidr,
  parseInetAton,
  parseIp,
} from './ip.js';
import { type EgressPolicy, egressPolicyProblems } from './policy.js';

/** What a request does with its destination: plain HTTP, or a `CONNECT` tunnel. */
export type EgressKind = 'http' | 'connect';

/** An address and port the proxy listens on. */
export interface ListeningAddress {
  /** The address (an unspecified one, `0.0.0.0` or `::`, for every address). */
  readonly address: string;
  /** The TCP port. */
  readonly port: number;
}

/** What a policy is compiled with besides the policy. */
export interface EgressOptions {
  /**
   * The host's own addresses (its network interfaces'), refused as
   * `host-address` unless an `allow` entry matches. A function is asked
   * at each check and should return the same array while nothing changed
   * (it is read again only when the array is another one).
   */
  readonly ownAddresses?: readonly string[] | (() => readonly string[]) | undefined;
  /**
   * Where the proxy listens: a destination at one of these addresses and
   * its port is refused as `own-address`, whatever the lists say. An
   * unspecified address (`0.0.0.0`, `::`) stands for loopback, itself and
   * every own address.
   */
  readonly listening?: readonly ListeningAddress[] | undefined;
}

/** A compiled destination policy. */
export interface EgressMatcher {
  /**
   * The check before resolution: a literal address (any spelling, see
   * {@link EgressMatcher.literalAddress}) is judged fully; a name against
   * the name entries and the ports. Undefined when the request may go on
   * (to resolution, for a name), else the rule that refuses it.
   */
  checkHost(host: string, port: number, kind: EgressKind): RefusalRule | undefined;
  /**
   * The check of one address the destination resolves to (the one the
   * proxy dials), with the name the request gave (`host`), if any: the
   * name entries match the name, the address entries the address.
   */
  checkAddress(
    address: string,
    port: number,
    kind: EgressKind,
    host?: string | undefined,
  ): RefusalRule | undefined;
  /**
   * The address a request's host spells literally, in standard form: an
   * IPv6 address (with or without brackets) or an IPv4 address in any
   * spelling the C library reads (`127.1`, `0x7f.1`, `2852039166`);
   * undefined for a host name.
   */
  literalAddress(host: string): string | undefined;
}

/** One listening address, compiled. */
interface Listening {
  readonly ip: IpAddress | undefined;
  readonly any: boolean;
  readonly port: number;
}

const DEFAULT_RANGES: readonly { readonly cidr: Cidr; readonly rule: RefusalRule }[] =
  DEFAULT_REFUSED_RANGES.map((r) => ({ cidr: parseCidr(r.cidr) as Cidr, rule: r.rule }));
const UNSPECIFIED_OR_LOOPBACK: readonly Cidr[] = [
  '0.0.0.0/32',
  '::/128',
  '127.0.0.0/8',
  '::1/128',
].map((c) => parseCidr(c) as Cidr);

/** Where IPv6 keeps IPv4 addresses: `::ffff:0:0/96`. */
const MAPPED = parseCidr('::ffff:0:0/96') as Cidr;

/** True when two ranges share an address. */
function overlaps(a: Cidr, b: Cidr): boolean {
  return cidrCovers(a, b) || cidrCovers(b, a);
}

/** The address a host spells literally, parsed, or undefined for a name. */
function literal(host: string): IpAddress | undefined {
  const ip = parseIp(host);
  if (ip !== undefined) return ip;
  const v4 = parseInetAton(host);
  return v4 === undefined ? undefined : { family: 4, value: v4 };
}

function portsOf(specs: readonly (number | string)[]): PortRange[] {
  return specs.map((s) => parsePortSpec(s) as PortRange);
}

function inPorts(ranges: readonly PortRange[], port: number): boolean {
  for (const r of ranges) if (port >= r.from && port <= r.to) return true;
  return false;
}

function sameAddress(a: IpAddress, b: IpAddress): boolean {
  if (a.family === 4) return b.family === 4 && a.value === b.value;
  return (
    b.family === 6 &&
    a.words[0] === b.words[0] &&
    a.words[1] === b.words[1] &&
    a.words[2] === b.words[2] &&
    a.words[3] === b.words[3]
  );
}

/** True when one of the forms of an address matches the entry's range. */
function formsIn(forms: readonly IpAddress[], cidr: Cidr): boolean {
  for (const f of forms) if (cidrContains(cidr, f)) return true;
  return false;
}

/**
 * Compiles `policy` (the defaults where it says nothing). Throws a
 * `TypeError` naming every problem (as {@link egressPolicyProblems} words
 * them, under `egress`) for a policy that is not good.
 */
export function compileEgressPolicy(
  policy: EgressPolicy | undefined,
  options: EgressOptions = {},
): EgressMatcher {
  const problems = egressPolicyProblems(policy);
  if (problems.length > 0) throw new TypeError(problems.join('; '));
  const allow = (policy?.allow ?? []).map((e) => parseEgressEntry(e) as EgressEntry);
  const deny = (policy?.deny ?? []).map((e) => parseEgressEntry(e) as EgressEntry);
  const connectPorts = portsOf(policy?.connectPorts ?? DEFAULT_CONNECT_PORTS);
  const httpPorts = portsOf(policy?.httpPorts ?? DEFAULT_HTTP_PORTS);
  /** Allow entries that name a port, by what they match. */
  const allowWithPorts = allow.filter((e) => e.ports !== undefined);
  // An IPv4 address is judged in its IPv4-mapped form too only where an entry could hold it: no
  // default range does, so most policies judge it once.
  const needMapped = [...allow, ...deny].some(
    (e) => e.kind === 'cidr' && e.cidr.family === 6 && overlaps(e.cidr, MAPPED),
  );
  const formsOf = (ip: IpAddress): readonly IpAddress[] =>
    ip.family === 4 && !needMapped ? [ip] : addressForms(ip);
  const listening: Listening[] = (options.listening ?? []).map((l) => {
    const ip = parseIp(l.address);
    const any =
      ip === undefined || UNSPECIFIED_OR_LOOPBACK.slice(0, 2).some((c) => cidrContains(c, ip));
    return { ip, any, port: l.port };
  });

  const own = options.ownAddresses;
  let ownSource: readonly string[] | undefined;
  let ownParsed: IpAddress[] = [];
  const ownAddresses = (): readonly IpAddress[] => {
    const list = typeof own === 'function' ? own() : (own ?? []);
    if (list !== ownSource) {
      ownSource = list;
      ownParsed = list.map((a) => parseIp(a)).filter((a) => a !== undefined);
    }
    return ownParsed;
  };

  /** True when an entry matches the destination: its name, or one form of its address. */
  const matches = (
    e: EgressEntry,
    name: string | undefined,
    forms: readonly IpAddress[] | undefined,
    port: number,
  ): boolean => {
    if (!entryAdmitsPort(e, port)) return false;
    if (e.kind === 'cidr') return forms !== undefined && formsIn(forms, e.cidr);
    return name !== undefined && entryMatchesName(e, name);
  };

  const isOwn = (forms: readonly IpAddress[]): boolean => {
    const mine = ownAddresses();
    for (const f of forms) for (const m of mine) if (sameAddress(f, m)) return true;
    return false;
  };

  const itself = (forms: readonly IpAddress[], port: number): boolean => {
    for (const l of listening) {
      if (l.port !== port) continue;
      for (const f of forms) {
        // The unspecified address reaches the host itself, whatever it listens on.
        if (cidrContains(UNSPECIFIED_OR_LOOPBACK[0] as Cidr, f)) return true;
        if (cidrContains(UNSPECIFIED_OR_LOOPBACK[1] as Cidr, f)) return true;
        if (l.ip !== undefined && !l.any && sameAddress(l.ip, f)) return true;
      }
      if (l.any) {
        for (const f of forms) {
          if (formsIn([f], UNSPECIFIED_OR_LOOPBACK[2] as Cidr)) return true;
          if (formsIn([f], UNSPECIFIED_OR_LOOPBACK[3] as Cidr)) return true;
        }
        if (isOwn(forms)) return true;
      }
    }
    return false;
  };

  const kindPorts = (kind: EgressKind) => (kind === 'connect' ? connectPorts : httpPorts);

  const judge = (
    forms: readonly IpAddress[],
    port: number,
    kind: EgressKind,
    name: string | undefined,
  ): RefusalRule | undefined => {
    if (itself(forms, port)) return 'own-address';
    for (const e of deny) if (matches(e, name, forms, port)) return 'denied';
    let exempt = false;
    for (const e of allow) {
      if (matches(e, name, forms, port)) {
        exempt = true;
        break;
      }
    }
    if (!exempt) {
      for (const r of DEFAULT_RANGES) if (formsIn(forms, r.cidr)) return r.rule;
      if (isOwn(forms)) return 'host-address';
    }
    if (!inPorts(kindPorts(kind), port)) {
      for (const e of allowWithPorts) if (matches(e, name, forms, port)) return undefined;
      return 'port';
    }
    return undefined;
  };

  const nameOf = (host: string | undefined): string | undefined => {
    if (host === undefined) return undefined;
    const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    return normalizeHostName(h) ?? (h.endsWith('.') ? h.slice(0, -1) : h).toLowerCase();
  };

  let lastHost: string | undefined;
  let lastName: string | undefined;
  return {
    checkHost(host, port, kind) {
      const ip = literal(host);
      if (ip !== undefined) return judge(formsOf(ip), port, kind, undefined);
      const name = nameOf(host);
      for (const e of deny) if (matches(e, name, undefined, port)) return 'denied';
      if (inPorts(kindPorts(kind), port)) return undefined;
      // An allow entry with the port may still admit it: by name now, by address after resolution.
      for (const e of allowWithPorts) {
        if (!entryAdmitsPort(e, port)) continue;
        if (e.kind === 'cidr' || matches(e, name, undefined, port)) return undefined;
      }
      return 'port';
    },
    checkAddress(address, port, kind, host) {
      const ip = literal(address);
      if (ip === undefined) return 'denied'; // not an address: nothing to dial
      // A name's addresses are checked one after another: its normal form is kept for the next.
      if (host !== lastHost) {
        lastHost = host;
        lastName = host === undefined || literal(host) !== undefined ? undefined : nameOf(host);
      }
      return judge(formsOf(ip), port, kind, lastName);
    },
    literalAddress(host) {
      const ip = literal(host);
      return ip === undefined ? undefined : formatIp(ip);
    },
  };
}
