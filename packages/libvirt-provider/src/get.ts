/**
 * Get: the domain's mark, state and address, read from libvirt on every
 * call.
 *
 * @module
 */
import type { Instance, Mark, OperationContext } from '@proxy-op/contract';
import { ErrorCode } from '@proxy-op/libvirt-rpc';
import { discoverAddress } from './address.js';
import { hasCode } from './classify.js';
import type { HostConfig } from './config.js';
import { domainState, lookupDomain, readMark } from './domain.js';
import { type DomainId, formatId } from './id.js';
import { hostLocation, hostOf, type Runtime, signalOf } from './runtime.js';
import type { Domain, LibvirtSeam } from './seam.js';
import { isActive, mapState } from './state.js';

/** A domain found at an ID, with its host, mark and state. */
export interface MarkedDomain {
  readonly host: HostConfig;
  readonly seam: LibvirtSeam;
  readonly dom: Domain;
  readonly mark: Mark;
  readonly st: { readonly state: number; readonly reason: number };
}

/**
 * The domain at the ID with its mark and state: NotFound when it is gone or
 * carries no mark of this flavour, Permanent when its host is not configured.
 */
export async function markedDomain(
  rt: Runtime,
  id: DomainId,
  ctx: OperationContext,
): Promise<MarkedDomain> {
  const host = hostOf(rt, id.host);
  if (host === undefined) {
    throw ctx.permanent(
      `host ${id.host} of ${formatId(id)} is not in ${rt.flavour.type}.hosts; add it back to reach the domain`,
    );
  }
  const signal = signalOf(ctx);
  const seam = await rt.hosts.pooled(host, ctx.signal);
  const dom = await lookupDomain(seam, id.name, signal);
  if (dom === undefined) throw ctx.notFound(`domain ${id.name} does not exist on host ${id.host}`);
  try {
    const mark = await readMark(rt, seam, dom, signal);
    if (mark === undefined) {
      throw ctx.notFound(`domain ${id.name} on host ${id.host} carries no ${rt.flavour.type} mark`);
    }
    return { host, seam, dom, mark, st: await domainState(seam, dom, signal) };
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_DOMAIN)) {
      throw ctx.notFound(`domain ${id.name} on host ${id.host} is gone`, err);
    }
    throw err;
  }
}

/**
 * Reads the domain at the ID: NotFound when it is gone or carries no mark
 * of this flavour; otherwise its UID, creation time and installation from
 * the mark, its state, its location (its host), and for a running domain
 * its address.
 */
export async function getInstance(
  rt: Runtime,
  id: DomainId,
  ctx: OperationContext,
): Promise<Instance> {
  const { host, seam, dom, mark, st } = await markedDomain(rt, id, ctx);
  const fields = { host: id.host, name: id.name };
  const signal = signalOf(ctx);
  const ip = isActive(st.state) ? await discoverAddress(rt, seam, dom, signal, fields) : undefined;
  const state = mapState(st.state, st.reason, ip);
  rt.log.debug({ ...fields, state, libvirtState: st.state }, `${rt.flavour.prefix} domain fetched`);
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    installation: mark.installation,
    state,
    ...(state === 'Running' && ip !== undefined ? { ip } : {}),
    location: hostLocation(host),
  };
}
