/**
 * Delete: destroy, undefine (NVRAM, managed save and snapshot metadata
 * with it), then the overlay and the seed by name; every step tolerant of
 * "already gone". A domain that is not the caller's is left alone with its
 * volumes.
 *
 * @module
 */
import { type DeleteContext, deletionProblem } from '@proxy-op/contract';
import { DomainUndefineFlags, ErrorCode } from '@proxy-op/libvirt-rpc';
import { hasCode } from './classify.js';
import { lookupDomain, readMark } from './domain.js';
import { type DomainId, formatId } from './id.js';
import { hostOf, type Runtime, signalOf } from './runtime.js';
import { removeVolumes } from './volumes.js';

/** The undefine flags: whatever libvirt keeps beside the definition goes too. */
export const UNDEFINE_FLAGS =
  DomainUndefineFlags.MANAGED_SAVE |
  DomainUndefineFlags.SNAPSHOTS_METADATA |
  DomainUndefineFlags.NVRAM;

/**
 * Deletes the domain at the ID and its volumes; resolves once all is gone.
 * A host no longer in the config is Permanent: the domain may still run
 * there, and only the admin can say whether to bring the host back.
 */
export async function deleteInstance(rt: Runtime, id: DomainId, ctx: DeleteContext): Promise<void> {
  const host = hostOf(rt, id.host);
  if (host === undefined) {
    throw ctx.permanent(
      `host ${id.host} of ${formatId(id)} is not in ${rt.flavour.type}.hosts: add it back so the domain can be deleted, or remove the domain and its volumes on that host by hand`,
    );
  }
  const signal = signalOf(ctx);
  const fields = { host: id.host, name: id.name };
  const seam = await rt.hosts.pooled(host, ctx.signal);
  let destroyed = false;
  let dom = await lookupDomain(seam, id.name, signal);
  let mark: Awaited<ReturnType<typeof readMark>>;
  if (dom !== undefined) {
    try {
      mark = await readMark(rt, seam, dom, signal);
    } catch (err) {
      // Gone between the lookup and the read: nothing left but its volumes.
      if (!hasCode(err, ErrorCode.ERR_NO_DOMAIN)) throw err;
      dom = undefined;
    }
  }
  if (dom !== undefined) {
    const problem = deletionProblem(mark, ctx.owner);
    if (problem !== undefined) {
      rt.log.debug(
        { ...fields, problem },
        `${rt.flavour.prefix} domain not the caller's, left alone`,
      );
      return;
    }
    try {
      await seam.domainDestroy({ dom }, signal);
      destroyed = true;
    } catch (err) {
      if (!hasCode(err, ErrorCode.ERR_OPERATION_INVALID, ErrorCode.ERR_NO_DOMAIN)) throw err;
    }
    try {
      await seam.domainUndefineFlags({ dom, flags: UNDEFINE_FLAGS }, signal);
    } catch (err) {
      if (!hasCode(err, ErrorCode.ERR_NO_DOMAIN)) throw err;
    }
  }
  const removed = await removeVolumes(seam, host.pool, id.name, signal);
  rt.log.debug(
    { ...fields, found: dom !== undefined, destroyed, volumes: removed },
    `${rt.flavour.prefix} domain deleted`,
  );
}
