/**
 * Provider IDs: `vms/<vmid>/<name>`. The node is not part of it, so a VM
 * that migrates stays addressable; the name tells our VM from another that
 * later received the same VMID.
 *
 * @module
 */
import type { IdParser } from '@proxy-op/contract';

/** A parsed provider ID. */
export interface ProxmoxId {
  /** The VM's VMID. */
  readonly vmid: number;
  /** The VM's name. */
  readonly name: string;
}

const VMID_RE = /^[1-9][0-9]{2,8}$/;
/** VM names this provider makes: the request's name, a lowercase DNS label. */
const NAME_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Formats `vms/<vmid>/<name>`. */
export function formatId(id: ProxmoxId): string {
  return `vms/${String(id.vmid)}/${id.name}`;
}

/**
 * Parses an ID strictly: three segments, the literal `vms`, a VMID from 100
 * to 999999999 without leading zeros, and a name that is a lowercase DNS
 * label (the only names Create gives VMs). Anything else
 * gives undefined (the operation shell makes that a Permanent error).
 */
export function parseId(id: string): ProxmoxId | undefined {
  if (typeof id !== 'string') return undefined;
  const parts = id.split('/');
  const [lit, vmid, name] = parts;
  if (
    parts.length !== 3 ||
    lit !== 'vms' ||
    vmid === undefined ||
    !VMID_RE.test(vmid) ||
    name === undefined ||
    !NAME_RE.test(name)
  ) {
    return undefined;
  }
  return { vmid: Number(vmid), name };
}

/** The ID parser the operation shell uses. */
export const ids: IdParser<ProxmoxId> = Object.freeze({
  parse: parseId,
  shape: 'vms/<vmid>/<name>',
});
