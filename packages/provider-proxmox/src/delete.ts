/**
 * Delete: stop the VM, delete its seed, destroy it; resolves once all is
 * gone. A VM that is not the caller's is left alone.
 *
 * @module
 */
import { type DeleteContext, deletionProblem, isMalformedAnswer } from '@proxy-op/contract';
import { classify, isDestroyRunning, isDoesNotExist, isDoesNotExistText } from './classify.js';
import { TaskFailedError } from './errors.js';
import type { ProxmoxId } from './id.js';
import { parseDescription } from './mark.js';
import { errorFields, isTaskLock, type Runtime, seedVolid } from './runtime.js';
import type { VmConfig } from './seam.js';
import { waitTask } from './tasks.js';

/**
 * Deletes the VM at the ID. Gone, or another VM at the VMID (another name,
 * or ours without its mark): the seed of `name` is deleted on every node
 * and nothing else is touched. A VM whose mark names another owner than
 * the caller's (`deletionProblem`) is left alone with its seed, which it
 * uses. Otherwise: stop, delete the seed on its node, destroy.
 */
export async function deleteInstance(
  rt: Runtime,
  id: ProxmoxId,
  ctx: DeleteContext,
): Promise<void> {
  const { api } = rt;
  const { vmid, name } = id;
  const fields = { vmid, name };
  const entry = (await api.clusterResources(ctx.signal)).find((e) => e.vmid === vmid);
  if (entry === undefined || entry.type !== 'qemu' || entry.template === 1) {
    rt.log.debug(fields, 'proxmox vm already gone');
    return deleteSeedEverywhere(rt, ctx, name);
  }
  const suspended = entry.lock === 'suspended';
  if (isTaskLock(entry.lock)) {
    throw ctx.transient(`VM ${vmid} is locked (${entry.lock}); retry once its task ends`);
  }
  const node = entry.node;
  let config: VmConfig;
  try {
    config = await api.vmConfig({ node, vmid }, ctx.signal);
  } catch (err) {
    if (!isDoesNotExist(err)) throw err;
    rt.log.debug(fields, 'proxmox vm already gone');
    return deleteSeedEverywhere(rt, ctx, name);
  }
  const mark = parseDescription(config.description);
  if (config.name !== name || mark === undefined) {
    rt.log.debug({ ...fields, node, found: config.name }, 'proxmox vm not ours, left alone');
    return deleteSeedEverywhere(rt, ctx, name);
  }
  const problem = deletionProblem(mark, ctx.owner);
  if (problem !== undefined) {
    rt.log.debug({ ...fields, node, problem }, 'proxmox vm of another owner, left alone');
    return;
  }
  if (isTaskLock(config.lock)) {
    throw ctx.transient(`VM ${vmid} is locked (${config.lock}); retry once its task ends`);
  }
  const ref = { node, vmid };
  // The listed status is pvestatd's last round: `unknown` for a VM it has
  // not seen yet (then status/current says), and up to ten seconds old
  // otherwise (a stale `stopped` shows when the destroy refuses a VM that
  // runs, and the VM is stopped then).
  let running = !suspended && entry.status !== 'stopped';
  if (!suspended && entry.status === 'unknown') {
    running = (await api.vmStatus(ref, ctx.signal)).status !== 'stopped';
  }
  if (running) await stop(rt, ctx, ref);
  const storage = rt.config.isoStorage;
  const seed = await api.deleteVolume(
    { node, storage, volid: seedVolid(storage, name) },
    ctx.signal,
  );
  await waitTask(rt, ctx, node, seed, rt.budgets.seedDelete);
  let destroyed = await destroy(rt, ctx, ref);
  if (destroyed === 'running') {
    await stop(rt, ctx, ref);
    destroyed = await destroy(rt, ctx, ref);
  }
  rt.log.debug({ ...fields, node, destroyed: destroyed === 'destroyed' }, 'proxmox vm deleted');
}

/** Stops the VM and waits for the task. */
async function stop(rt: Runtime, ctx: DeleteContext, ref: { node: string; vmid: number }) {
  const upid = await rt.api.stop(ref, ctx.signal);
  await waitTask(rt, ctx, ref.node, upid, rt.budgets.stop);
}

/**
 * Destroys the VM with its disks and its place in backup and replication
 * jobs, and waits for the task. `gone` when it was gone already, or when
 * another destroy (an earlier Delete cut off on our side but carried out
 * by Proxmox) removed it while this one waited for the VM's lock;
 * `running` when Proxmox refuses it because the VM runs.
 */
async function destroy(
  rt: Runtime,
  ctx: DeleteContext,
  ref: { node: string; vmid: number },
): Promise<'destroyed' | 'gone' | 'running'> {
  let upid: string;
  try {
    upid = await rt.api.destroy(ref, ctx.signal);
  } catch (err) {
    if (isDoesNotExist(err)) return 'gone';
    if (isDestroyRunning(err)) return 'running';
    throw err;
  }
  try {
    await waitTask(rt, ctx, ref.node, upid, rt.budgets.destroy);
  } catch (err) {
    if (TaskFailedError.isInstance(err) && isDoesNotExistText(err.exitstatus)) return 'gone';
    throw err;
  }
  return 'destroyed';
}

/**
 * Deletes the seed on every configured node, in config order (its VM's
 * node is unknown). A node that fails is skipped, unless the call was
 * cancelled, the answer could not be read, or the failure is Permanent (a
 * missing privilege every node would refuse).
 */
async function deleteSeedEverywhere(rt: Runtime, ctx: DeleteContext, name: string): Promise<void> {
  const storage = rt.config.isoStorage;
  for (const node of rt.config.nodes) {
    try {
      const upid = await rt.api.deleteVolume(
        { node, storage, volid: seedVolid(storage, name) },
        ctx.signal,
      );
      await waitTask(rt, ctx, node, upid, rt.budgets.seedDelete);
    } catch (err) {
      if (
        ctx.signal?.aborted ||
        isMalformedAnswer(err) ||
        classify('delete', err) === 'Permanent'
      ) {
        throw err;
      }
      rt.log.debug({ node, name, ...errorFields(err) }, 'proxmox seed delete skipped on a node');
    }
  }
}
