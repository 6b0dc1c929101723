/**
 * ListByTag: every VM of an installation, from one cluster listing and one
 * config read per candidate.
 *
 * @module
 */
import {
  belongsTo,
  type Instance,
  isMalformedAnswer,
  type OperationContext,
} from '@proxy-op/contract';
import { vmLocation } from './get.js';
import { formatId } from './id.js';
import { hasProxyTag, parseDescription } from './mark.js';
import { errorFields, type Runtime } from './runtime.js';
import type { VmConfig } from './seam.js';

/**
 * Lists the installation's VMs with ID, UID, creation time and location
 * (the node the listing places each on, as Get reports it). Candidates
 * are named VMs tagged `proxy_operator` or named `proxy-*`; one whose
 * config cannot be read (its node is down, it was destroyed meanwhile) is
 * skipped, but an answer that cannot be read fails the call.
 */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const resources = await rt.api.clusterResources(ctx.signal);
  // Tags come from the config as it is now, the name from pvestatd's last
  // round (none yet for a VM seconds old); a clone in progress is skipped:
  // its Create is live.
  const candidates = resources.filter(
    (e) =>
      e.type === 'qemu' &&
      e.template !== 1 &&
      e.lock !== 'clone' &&
      (hasProxyTag(e.tags) || (e.name ?? '').startsWith('proxy-')),
  );
  const out: Instance[] = [];
  let unmarked = 0;
  for (const e of candidates) {
    let config: VmConfig;
    try {
      config = await rt.api.vmConfig({ node: e.node, vmid: e.vmid }, ctx.signal);
    } catch (err) {
      if (ctx.signal?.aborted || isMalformedAnswer(err)) throw err;
      rt.log.debug(
        { vmid: e.vmid, node: e.node, ...errorFields(err) },
        'proxmox unreadable candidate skipped',
      );
      continue;
    }
    const mark = parseDescription(config.description);
    if (mark === undefined || config.name === undefined) {
      unmarked++;
      continue;
    }
    if (!belongsTo(mark, installation)) continue;
    out.push({
      id: formatId({ vmid: e.vmid, name: config.name }),
      uid: mark.uid,
      createdAt: mark.createdAt,
      installation: mark.installation,
      location: vmLocation(e.node),
    });
  }
  rt.log.debug(
    { candidates: candidates.length, listed: out.length, unmarked },
    'proxmox vms listed',
  );
  return out;
}
