/**
 * Get: the VM's state, IP, UID and creation time, read from Proxmox on
 * every call (the listing, the config, `status/current`, the guest agent).
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { Instance, Mark, OperationContext, State } from '@proxy-op/contract';
import { AGENT_NOT_CONFIGURED, AGENT_NOT_RUNNING, isDoesNotExist } from './classify.js';
import { ApiError } from './errors.js';
import { formatId, type ProxmoxId } from './id.js';
import { parseDescription } from './mark.js';
import { agentEnabled, isTaskLock, type Runtime, seedVolid } from './runtime.js';
import type { VmConfig, VmStatus } from './seam.js';

/** A VM of the provider's as the listing and its config show it now. */
export interface MarkedVm {
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
  };
  if (listedLock === 'suspended' || config.lock === 'suspended') {
    return { ...base, state: 'Stopped' };
  }
  const st = await rt.api.vmStatus({ node, vmid }, ctx.signal);
  const state = mapStatus(st.status, st.qmpstatus);
  const noAgent = state === 'agent' ? withoutAgent(config, st) : undefined;
  if (noAgent !== undefined) {
    // The agent call would answer "not running" forever, as for an agent still
    // booting: this VM can never report an address, so it is replaced.
    rt.log.debug(
      { ...fields, agent: config.agent ?? 'none', reason: noAgent },
      'proxmox vm without guest agent can never report an address',
    );
    return { ...base, state: 'Stopped' };
  }
  if (state === 'Stopped' && st.status === 'stopped' && !seedAttached(rt, config, name)) {
    // Cloned but not yet given its seed: a Create has not got as far as the start.
    return { ...base, state: 'Provisioning' };
  }
  if (state !== 'agent') return { ...base, state };
  const agent = await agentAddress(rt, ctx, node, vmid);
  rt.log.trace({ ...fields, ip: agent.ip ?? '' }, 'proxmox agent answered');
  return agent.ip === undefined
    ? { ...base, state: agent.state }
    : { ...base, state: agent.state, ip: agent.ip };
}

/**
 * Why a running VM can never report an address, or undefined when it can:
 * its config has no agent or switches it off (`agent: 0`, pending changes
 * included: from the next start on), or QEMU runs without the agent's
 * channel (status/current has no `agent` flag: the agent was switched on
 * only after the start, and a pending change waits for the next one).
 */
function withoutAgent(config: VmConfig, st: VmStatus): string | undefined {
  if (!agentEnabled(config.agent)) return 'the config has no guest agent';
  if (st.agent !== 1) return 'the vm runs without the guest agent (enabled after its start)';
  return undefined;
}

/** True when the VM's config has the seed of `name` on ide2, as Create's config step writes it. */
function seedAttached(rt: Runtime, config: VmConfig, name: string): boolean {
  const ide2 = config.ide2 ?? '';
  return ide2.split(',')[0] === seedVolid(rt.config.isoStorage, name);
}

/** Reads the guest agent: Running with a routable IPv4, else what its answer means (README, Behaviour). */
async function agentAddress(
  rt: Runtime,
  ctx: OperationContext,
  node: string,
  vmid: number,
): Promise<{ state: State; ip?: string }> {
  try {
    const ifaces = await rt.api.agentNetworkInterfaces({ node, vmid }, ctx.signal);
    const ip = firstRoutableIPv4(ifaces);
    return ip === undefined ? { state: 'Provisioning' } : { state: 'Running', ip };
  } catch (err) {
    if (ApiError.isInstance(err) && err.status === 500) {
      if (err.apiMessage === AGENT_NOT_RUNNING) return { state: 'Provisioning' };
      if (err.apiMessage === AGENT_NOT_CONFIGURED) return { state: 'Stopped' };
    }
    throw err;
  }
}

/**
 * Maps `status/current` to a state, or `agent` when the guest agent
 * decides: a running VM whose QEMU is running. `prelaunch` is
 * Provisioning; paused, suspended, errors and anything unknown are Stopped.
 */
export function mapStatus(status: string, qmpstatus: string | undefined): State | 'agent' {
  if (status === 'running') {
    if (qmpstatus === undefined || qmpstatus === 'running') return 'agent';
    if (qmpstatus === 'prelaunch') return 'Provisioning';
    return 'Stopped';
  }
  return 'Stopped';
}

/** The first IPv4 of the first interface, in the agent's order, that is not loopback, link-local or unspecified. */
export function firstRoutableIPv4(
  ifaces: readonly {
    name: string;
    'ip-addresses'?: readonly { 'ip-address-type': string; 'ip-address': string }[] | undefined;
  }[],
): string | undefined {
  for (const iface of ifaces) {
    if (iface.name === 'lo') continue;
    for (const a of iface['ip-addresses'] ?? []) {
      const ip = a['ip-address'];
      if (a['ip-address-type'] !== 'ipv4' || !isIPv4(ip)) continue;
      if (ip.startsWith('127.') || ip.startsWith('169.254.') || ip === '0.0.0.0') continue;
      return ip;
    }
  }
  return undefined;
}
