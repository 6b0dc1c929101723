/**
 * The source address of the proxy's connections to origins (and to its
 * parents), and the connection made from it. Two options pick it:
 *
 * - `outgoingAddress` (as Squid's `tcp_outgoing_address`): one address for
 *   every destination, except that a loopback address can only reach
 *   loopback destinations, so for any other one the system picks the source;
 * - `egress.addresses` (`egress-addresses.ts`): a set of addresses, one per
 *   session or at random, of the family of the address dialled. A name is
 *   resolved first ({@link connectFrom}), so the source can match it.
 *
 * @module
 */
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import { connect, isIP, type LookupFunction, type Socket, type TcpNetConnectOpts } from 'node:net';
import type { EgressAddressSet, Family } from './egress-addresses.js';

/**
 * Picks the source address of a connection to `host` (a name or an
 * address) for `session` (the session id the connection is for, when it
 * has one), or undefined to let the system choose.
 */
export interface OutgoingAddress {
  (host: string, session?: string): string | undefined;
  /**
   * The choice depends on the address dialled (its family): a name is
   * resolved before the connection is made, and the picker asked with the
   * addresses it resolves to.
   */
  readonly byAddress?: boolean | undefined;
  /**
   * The choice depends on the session: a kept-open connection to an origin
   * then serves only requests of the session it was made for (or, made
   * without one, only requests without one).
   */
  readonly bySession?: boolean | undefined;
}

const isLoopback = (address: string) =>
  address === '::1' || (isIP(address) === 4 && address.startsWith('127.'));

/** The picker for `outgoingAddress`: undefined (the system always chooses) when none is set. */
export function outgoingAddressFor(address: string | undefined): OutgoingAddress {
  if (address === undefined || address === '') return () => undefined;
  if (!isLoopback(address)) return () => address;
  const family = isIP(address);
  // Only an address literal of the same family is known to be on loopback before resolving.
  return (host) => (isLoopback(host) && isIP(host) === family ? address : undefined);
}

/**
 * The picker for `egress.addresses`: for an address of a family the set
 * has, the set's address for the session (or one at random); for any other
 * address, undefined (the system chooses); for a name, undefined until it
 * is resolved ({@link connectFrom} resolves it first).
 */
export function egressAddressPicker(set: EgressAddressSet): OutgoingAddress {
  const pick = (host: string, session?: string) => {
    const family = isIP(host);
    return family === 0 ? undefined : set.pick(family as Family, session);
  };
  return Object.assign(pick, { byAddress: true, bySession: true });
}

/**
 * Of the addresses a name resolved to, those to dial and the source to dial
 * them from: the first family, in the resolver's order, that the picker has
 * a source for, with that family's addresses only; when it has none for any
 * of them, every address and no source (the system chooses).
 */
export function sourceFor(
  outgoing: OutgoingAddress,
  session: string | undefined,
  addresses: readonly LookupAddress[],
): { readonly localAddress: string | undefined; readonly addresses: readonly LookupAddress[] } {
  const tried = new Set<number>();
  for (const a of addresses) {
    if (tried.has(a.family)) continue;
    tried.add(a.family);
    const localAddress = outgoing(a.address, session);
    if (localAddress !== undefined) {
      return { localAddress, addresses: addresses.filter((b) => b.family === a.family) };
    }
  }
  return { localAddress: undefined, addresses };
}

/** `node:dns`, loaded when a name is first resolved here. */
let dns: typeof import('node:dns') | undefined;

/**
 * `net.connect(options)` from the source `outgoing` picks for `session`.
 * Returns the socket at once, as `net.connect` does: what is written to it,
 * and its end, wait for the connection. For a picker that goes by the
 * address dialled and a `host` that is a name, the name is resolved first
 * (with `options.lookup`, or `dns.lookup`), the source picked for the
 * addresses it resolves to ({@link sourceFor}), and the connection made to
 * those addresses, without resolving the name again.
 */
export function connectFrom(
  outgoing: OutgoingAddress,
  session: string | undefined,
  options: TcpNetConnectOpts & { readonly host: string },
): Socket {
  const { host } = options;
  if (outgoing.byAddress !== true || isIP(host) !== 0) {
    const localAddress = outgoing(host, session);
    return connect(localAddress === undefined ? options : { ...options, localAddress });
  }
  // The socket is connecting from now on, as net.connect returns it: what is written to it, and
  // its end, wait for the connection. Its own lookup waits for good; the connection is made by
  // a second connect() once the name is resolved here and the source picked, to the addresses
  // resolved (the source must be known before the connection starts: net binds it first).
  const socket = connect({ ...options, lookup: () => {} });
  dns ??= process.getBuiltinModule('node:dns');
  const lookup: LookupFunction = options.lookup ?? dns.lookup;
  const asked: LookupAllOptions = {
    all: true,
    family: options.family ?? 0,
    hints: options.hints ?? (options.family === 4 || options.family === 6 ? 0 : dns.ADDRCONFIG),
  };
  lookup(host, asked, (err, resolved) => {
    if (socket.destroyed) return;
    const list = Array.isArray(resolved) ? resolved : [];
    if (err !== null || list.length === 0) {
      socket.destroy(
        err ?? Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }),
      );
      return;
    }
    const { localAddress, addresses } = sourceFor(outgoing, session, list);
    socket.connect({
      ...options,
      ...(localAddress === undefined ? {} : { localAddress }),
      lookup: replay(addresses),
    });
  });
  return socket;
}

/** A `lookup` that answers with `addresses`, resolved already. */
function replay(addresses: readonly LookupAddress[]): LookupFunction {
  return ((
    _host: string,
    options: LookupOneOptions | LookupAllOptions,
    callback: (err: null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    const first = addresses[0] as LookupAddress;
    process.nextTick(() => {
      if (options.all === true) callback(null, [...addresses]);
      else callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}
