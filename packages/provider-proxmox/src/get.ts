/**
 * Get: the VM's state, IP, UID, creation time and location, read from
 * Proxmox on every call (the listing, the config, `status/current`, the
 * guest agent), mapped to the contract's state by `state.ts`.
 *
 * @module
 */
import type { Instance, Location, Mark, OperationContext, State } from '@proxy-op/contract';
import { isDoesNotExist } from './classify.js';
import { formatId, type ProxmoxId } from './id.js';
import { parseDescription } from './mark.js';
import { isTaskLock, type Runtime, seedVolid } from './runtime.js';
import type { VmConfig } from './seam.js';
import { agentErrorState, agentState, mapStatus, NO_AGENT_REASON, withoutAgent } from './state.js';

/** Get's warning for a VM of ours that can never report an address (its `reason` says why). */
const NO_AGENT_MESSAGE = 'proxmox vm without guest agent can never report an address';

/**
 * Where a VM runs: its node, as the cluster listing names it now, is its
 * zone. A VM migrated to another node is reported where it is as read.
 * Get and ListByTag both take the node from the listing, so they agree.
 */
export function vmLocation(node: string): Location {
  return { zone: node };
}

/** A VM of the provider's as the listing and its config show it now. */
export interface MarkedVm {
  /** The node the listing places it on (the config is read there). */
  readonly node: string;
  /** The listing's lock (pvestatd's view), if any. */
  readonly listedLock: string | undefined;
  readonly config: VmConfig;
  readonly mark: Mark;
}

/**
 * Finds the VM at the ID and reads its config: NotFound when it is gone,
 * another VM, or carries no mark; Transient while a task holds its lock.
 * What every operation on an existing VM starts with.
 */
export async function markedVm(
  rt: Runtime,
  id: ProxmoxId,
  ctx: OperationContext,
): Promise<MarkedVm> {
  const { vmid, name } = id;
  const entry = (await rt.api.clusterResources(ctx.signal)).find((e) => e.vmid === vmid);
  if (entry === undefined || entry.type !== 'qemu') {
    throw ctx.notFound(`VM ${vmid} does not exist`);
  }
  // The lock comes from the config as it is now; the listed name and status
  // come from pvestatd's last round (nameless and `unknown` for a VM it has
  // not seen yet), so they decide nothing here: the config and
  // status/current do.
  if (isTaskLock(entry.lock)) {
    throw ctx.transient(`VM ${vmid} is locked (${entry.lock})`);
  }
  let config: VmConfig;
  try {
    config = await rt.api.vmConfig({ node: entry.node, vmid }, ctx.signal);
  } catch (err) {
    if (isDoesNotExist(err)) throw ctx.notFound(`VM ${vmid} does not exist`, err);
    throw err;
  }
  if (isTaskLock(config.lock)) throw ctx.transient(`VM ${vmid} is locked (${config.lock})`);
  const fields = { vmid, name, node: entry.node };
  if (config.name !== name) {
    rt.log.debug({ ...fields, found: config.name }, 'proxmox vmid reused by another vm');
    throw ctx.notFound(`VM ${vmid} is no longer ${name}`);
  }
  const mark = parseDescription(config.description);
  if (mark === undefined) {
    rt.log.debug(fields, 'proxmox vm carries no mark');
    throw ctx.notFound(`VM ${vmid} (${name}) carries no proxy-op mark`);
  }
  return { node: entry.node, listedLock: entry.lock, config, mark };
}

/** Reads the VM at the ID; NotFound when it is gone, another VM, or carries no mark. */
export async function getInstance(
  rt: Runtime,
  id: ProxmoxId,
  ctx: OperationContext,
): Promise<Instance> {
  const { vmid, name } = id;
  const { node, listedLock, config, mark } = await markedVm(rt, id, ctx);
  const fields = { vmid, name, node };
  const base = {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    installation: mark.installation,
    location: vmLocation(node),
  };
  if (listedLock === 'suspended' || config.lock === 'suspended') {
    return { ...base, state: 'Stopped' };
  }
  const st = await rt.api.vmStatus({ node, vmid }, ctx.signal);
  const state = mapStatus(st.status, st.qmpstatus);
  const noAgent = state === 'agent' ? withoutAgent(config, st) : undefined;
  if (noAgent !== undefined) {
    // No agent call: it would answer "not configured" (no key) or "not running"
    // forever (agent: 0, or no channel), the latter as for an agent still
    // booting. This VM can never report an address, so it is replaced; Create
    // always writes agent=1, so a person changed it, and is told why.
    rt.log.warn({ ...fields, agent: config.agent ?? 'none', reason: noAgent }, NO_AGENT_MESSAGE);
    return { ...base, state: 'Stopped' };
  }
  if (state === 'Stopped' && st.status === 'stopped' && !seedAttached(rt, config, name)) {
    // Cloned but not yet given its seed: a Create has not got as far as the start.
    return { ...base, state: 'Provisioning' };
  }
  if (state !== 'agent') return { ...base, state };
  const agent = await agentAddress(rt, ctx, node, vmid);
  if (agent.state === 'Stopped') {
    rt.log.warn(
      { ...fields, agent: config.agent ?? 'none', reason: NO_AGENT_REASON.keyGone },
      NO_AGENT_MESSAGE,
    );
  }
  rt.log.trace({ ...fields, ip: agent.ip ?? '' }, 'proxmox agent answered');
  return agent.ip === undefined
    ? { ...base, state: agent.state }
    : { ...base, state: agent.state, ip: agent.ip };
}

/** True when the VM's config has the seed of `name` on ide2, as Create's config step writes it. */
function seedAttached(rt: Runtime, config: VmConfig, name: string): boolean {
  const ide2 = config.ide2 ?? '';
  return ide2.split(',')[0] === seedVolid(rt.config.isoStorage, name);
}

/** Asks the guest agent for the VM's addresses: Running with a routable IPv4, else what its answer means. */
async function agentAddress(
  rt: Runtime,
  ctx: OperationContext,
  node: string,
  vmid: number,
): Promise<{ state: State; ip?: string }> {
  try {
    return agentState(await rt.api.agentNetworkInterfaces({ node, vmid }, ctx.signal));
  } catch (err) {
    const state = agentErrorState(err);
    if (state === undefined) throw err;
    return { state };
  }
}
