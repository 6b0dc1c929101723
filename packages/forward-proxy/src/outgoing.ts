/**
 * The source address of the proxy's connections to origins
 * (`outgoingAddress`, as Squid's `tcp_outgoing_address`): given for every
 * destination, except that a loopback address can only reach loopback
 * destinations, so for any other one the system picks the source.
 *
 * @module
 */
import { isIP } from 'node:net';

const isLoopback = (address: string) =>
  address === '::1' || (isIP(address) === 4 && address.startsWith('127.'));

/** Picks the source address of a connection to `host`, or undefined to let the system choose. */
export type OutgoingAddress = (host: string) => string | undefined;

/** The picker for `outgoingAddress`: undefined (the system always chooses) when none is set. */
export function outgoingAddressFor(address: string | undefined): OutgoingAddress {
  if (address === undefined || address === '') return () => undefined;
  if (!isLoopback(address)) return () => address;
  const family = isIP(address);
  // Only an address literal of the same family is known to be on loopback before resolving.
  return (host) => (isLoopback(host) && isIP(host) === family ? address : undefined);
}
