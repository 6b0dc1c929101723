/**
 * What a destination policy refuses when it says nothing: the address
 * ranges an egress proxy must not reach from outside (the host itself,
 * link-local and cloud metadata services, private networks, multicast),
 * and the ports plain HTTP and CONNECT may use.
 *
 * @module
 */
import type { PortSpec } from './entry.js';

/**
 * The name of a rule that refused a destination, as the proxy's answer
 * and its log give it. Stable: a caller may match on it.
 */
export type RefusalRule =
  /** The proxy's own listening address and port (a request to itself), whatever the lists say. */
  | 'own-address'
  /** A `deny` entry. */
  | 'denied'
  /** A port the request's kind may not use, and no `allow` entry names it. */
  | 'port'
  /** `0.0.0.0/8`: "this network", which reaches the host itself. */
  | 'this-network'
  /** `::`: the unspecified address, which reaches the host itself. */
  | 'unspecified'
  /** `127.0.0.0/8`, `::1`: the host's loopback. */
  | 'loopback'
  /** Cloud metadata services outside the link-local range (`fd00:ec2::254`, `168.63.129.16`). */
  | 'metadata'
  /** `169.254.0.0/16`, `fe80::/10`: link-local, where cloud metadata services answer. */
  | 'link-local'
  /** `100.64.0.0/10`: shared address space (carrier-grade NAT, some cloud metadata services). */
  | 'shared'
  /** `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `fc00::/7`: private networks. */
  | 'private'
  /** `224.0.0.0/4`, `ff00::/8`. */
  | 'multicast'
  /** `255.255.255.255`. */
  | 'broadcast'
  /** An address of one of the host's own network interfaces. */
  | 'host-address';

/** One range refused by default, with the rule that names it. */
export interface RefusedRange {
  /** The range, as a CIDR. */
  readonly cidr: string;
  /** The rule a destination in it is refused by. */
  readonly rule: RefusalRule;
}

/**
 * The ranges refused by default, in the order they are tried (the first
 * that holds an address names its refusal). IPv6 addresses that carry an
 * IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 `64:ff9b::/96`) are
 * judged as that IPv4 address too.
 */
export const DEFAULT_REFUSED_RANGES: readonly RefusedRange[] = Object.freeze(
  (
    [
      ['::/128', 'unspecified'],
      ['127.0.0.0/8', 'loopback'],
      ['::1/128', 'loopback'],
      ['0.0.0.0/8', 'this-network'],
      ['fd00:ec2::254/128', 'metadata'],
      ['168.63.129.16/32', 'metadata'],
      ['169.254.0.0/16', 'link-local'],
      ['fe80::/10', 'link-local'],
      ['100.64.0.0/10', 'shared'],
      ['10.0.0.0/8', 'private'],
      ['172.16.0.0/12', 'private'],
      ['192.168.0.0/16', 'private'],
      ['fc00::/7', 'private'],
      ['224.0.0.0/4', 'multicast'],
      ['ff00::/8', 'multicast'],
      ['255.255.255.255/32', 'broadcast'],
    ] as const
  ).map(([cidr, rule]) => Object.freeze({ cidr, rule })),
);

/** The ports `CONNECT` may reach by default: 443 only. */
export const DEFAULT_CONNECT_PORTS: readonly PortSpec[] = Object.freeze([443]);

/**
 * The ports plain HTTP may reach by default: 80, 443 and the unprivileged
 * ones (1025 to 65535), as Squid's stock `Safe_ports` has them, less the
 * privileged ports of other protocols (SMTP, SSH, ...).
 */
export const DEFAULT_HTTP_PORTS: readonly PortSpec[] = Object.freeze([80, 443, '1025-65535']);
