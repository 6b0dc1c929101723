/**
 * Server status to the contract's state, and what Get reports beside it:
 * the address, the IPv6 range and the location.
 *
 * @module
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Location, State } from '@proxy-op/contract';
import type { ServerView } from './answers.js';

/**
 * The contract's state of a server status: `initializing`, `starting`,
 * `rebuilding` and `migrating` are Provisioning; `running` is Running with
 * an IPv4 address and Provisioning without one; `stopping` and `off` are
 * Stopped; `deleting` is Terminated; anything else (`unknown`) is Stopped.
 */
export function mapState(status: string, ip: string | undefined): State {
  switch (status) {
    case 'initializing':
    case 'starting':
    case 'rebuilding':
    case 'migrating':
      return 'Provisioning';
    case 'running':
      return ip === undefined ? 'Provisioning' : 'Running';
    case 'deleting':
      return 'Terminated';
    default:
      return 'Stopped';
  }
}

/** The server's primary public IPv4 address, when it has a usable one. */
export function addressOf(server: ServerView): string | undefined {
  return server.ipv4 !== undefined && isIPv4(server.ipv4) ? server.ipv4 : undefined;
}

/** The server's IPv6 network (`2a01:4f8:1c19:1403::/64`), when it has one. */
export function ipv6RangeOf(server: ServerView): string | undefined {
  const v = server.ipv6;
  if (v === undefined) return undefined;
  const [addr = '', prefix] = v.split('/');
  return isIPv6(addr) && prefix !== undefined && /^\d{1,3}$/.test(prefix) ? v : undefined;
}

/**
 * Where a server runs: its location as the region (`fsn1`), its
 * datacenter as the zone (`fsn1-dc14`), and the location's country as
 * the API reports it (upper case; left out when it is not a two-letter code).
 */
export function locationOf(server: ServerView): Location {
  const country = server.country.toUpperCase();
  return {
    region: server.location,
    zone: server.datacenter,
    ...(/^[A-Z]{2}$/.test(country) ? { country } : {}),
  };
}
