/**
 * A running domain's address: the flavour's sources in its order (the
 * guest agent, DHCP leases, the ARP table), a failing source skipped, the
 * first routable IPv4 winning.
 *
 * @module
 */

import { isIPv4 } from 'node:net';
import { isMalformedAnswer } from '@proxy-op/contract';
import { InterfaceAddressSource } from '@proxy-op/libvirt-rpc';
import type { AddressSource } from './flavour.js';
import { errorFields, type Runtime } from './runtime.js';
import type { Domain, DomainInterface, LibvirtSeam } from './seam.js';

const SOURCE: Record<AddressSource, number> = {
  agent: InterfaceAddressSource.AGENT,
  lease: InterfaceAddressSource.LEASE,
  arp: InterfaceAddressSource.ARP,
};

/** `VIR_IP_ADDR_TYPE_IPV4`. */
const IPV4 = 0;

/**
 * The first IPv4 of the interfaces in the source's order that is not
 * loopback, link-local or unspecified; interface `lo` and addresses whose
 * type tag says IPv4 but whose text is not one are passed over.
 */
export function firstIPv4(ifaces: readonly DomainInterface[]): string | undefined {
  for (const iface of ifaces) {
    if (iface.name === 'lo') continue;
    for (const a of iface.addrs) {
      if (a.type !== IPV4 || !isIPv4(a.addr)) continue;
      if (a.addr.startsWith('127.') || a.addr.startsWith('169.254.') || a.addr === '0.0.0.0') {
        continue;
      }
      return a.addr;
    }
  }
  return undefined;
}

/**
 * Asks each source in turn and returns the first routable IPv4. A source
 * that fails (no agent yet, no lease, an ARP table the host cannot read)
 * is skipped with a trace line; only the caller's signal ending, or an
 * answer that cannot be read, fails the call.
 */
export async function discoverAddress(
  rt: Runtime,
  seam: LibvirtSeam,
  dom: Domain,
  signal: AbortSignal,
  fields: Record<string, string>,
): Promise<string | undefined> {
  for (const source of rt.flavour.addressSources) {
    let ifaces: DomainInterface[];
    try {
      ifaces = await seam.domainInterfaceAddresses({ dom, source: SOURCE[source] }, signal);
    } catch (err) {
      if (signal.aborted || isMalformedAnswer(err)) throw err;
      rt.log.trace(
        { ...fields, source, ...errorFields(err) },
        `${rt.flavour.prefix} address source skipped`,
      );
      continue;
    }
    if (!Array.isArray(ifaces)) throw new TypeError(`${source} addresses are not a list`);
    const ip = firstIPv4(ifaces);
    rt.log.trace(
      {
        ...fields,
        source,
        addresses: ifaces
          .flatMap((i) => i.addrs.map((a) => `${i.name}:${a.addr}/${a.prefix}`))
          .join(' '),
      },
      `${rt.flavour.prefix} addresses read`,
    );
    if (ip !== undefined) return ip;
  }
  return undefined;
}
