/**
 * The contract's state of a Proxmox VM, from what Get reads (README,
 * Behaviour, has the table): `status/current`, whether a running VM can
 * ever report an address (its config and QEMU's agent channel), and the
 * guest agent's answer, an address or an error.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { State } from '@proxy-op/contract';
import { AGENT_NOT_CONFIGURED, AGENT_NOT_RUNNING } from './classify.js';
import { ApiError } from './errors.js';
import { agentEnabled } from './runtime.js';
import type { AgentInterface, VmConfig, VmStatus } from './seam.js';

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

/**
 * The reasons Get gives (its warning's `reason`) for a running VM that can
 * never report an address, one per case. Create writes `agent=1` on every
 * VM, so each means the VM was changed by hand after it was created.
 */
export const NO_AGENT_REASON = {
  /** No `agent` key in the config: the agent API would answer "No QEMU guest agent configured". */
  noKey: 'the config has no agent key',
  /** `agent: 0` or `enabled=0`: the agent API would answer "QEMU guest agent is not running". */
  off: 'the config switches the guest agent off (agent: 0)',
  /** Enabled only after the start: QEMU has no agent channel, the agent API answers "not running". */
  afterStart: 'the vm runs without the guest agent (enabled after its start)',
  /** The VM stopped and its key removed between the reads: the agent call answered "not configured". */
  keyGone: 'the agent call answers that the running config has no agent key',
} as const;

/**
 * Why a running VM can never report an address, or undefined when it can:
 * its config has no `agent` key, or switches the agent off (`agent: 0`;
 * pending changes included: from the next start on), or QEMU runs without
 * the agent's channel (status/current has no `agent` flag: the agent was
 * switched on only after the start, and a pending change waits for the
 * next one). Each case has its own {@link NO_AGENT_REASON}.
 */
export function withoutAgent(config: VmConfig, st: VmStatus): string | undefined {
  if (config.agent === undefined) return NO_AGENT_REASON.noKey;
  if (!agentEnabled(config.agent)) return NO_AGENT_REASON.off;
  if (st.agent !== 1) return NO_AGENT_REASON.afterStart;
  return undefined;
}

/**
 * The state the guest agent's addresses give: Running with the first
 * routable IPv4 ({@link firstRoutableIPv4}), Provisioning while there is none.
 */
export function agentState(ifaces: readonly AgentInterface[]): { state: State; ip?: string } {
  const ip = firstRoutableIPv4(ifaces);
  return ip === undefined ? { state: 'Provisioning' } : { state: 'Running', ip };
}

/**
 * The state a failed agent call gives: Provisioning while the agent is not
 * running (the guest boots, or has not installed it yet: "QEMU guest agent
 * is not running"), Stopped when the VM's running config has no `agent`
 * key ("No QEMU guest agent configured", which qemu-server answers before
 * it looks at whether the VM runs); undefined for any other failure, which
 * Get lets through (Transient).
 */
export function agentErrorState(err: unknown): State | undefined {
  if (ApiError.isInstance(err) && err.status === 500) {
    if (err.apiMessage === AGENT_NOT_RUNNING) return 'Provisioning';
    if (err.apiMessage === AGENT_NOT_CONFIGURED) return 'Stopped';
  }
  return undefined;
}
