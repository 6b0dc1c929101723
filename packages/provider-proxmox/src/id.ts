/**
 * Provider IDs: `vms/<vmid>/<name>`. The node is not part of it, so a VM
 * that migrates stays addressable; the name tells our VM from another that
 * later received the same VMID.
 *
 * @module
 */
import { type Operation, permanent } from '@proxy-op/contract';

/** A parsed provider ID. */
export interface VmId {
  readonly vmid: number;
  readonly name: string;
}

const VMID_RE = /^[1-9][0-9]{2,8}$/;

/** Formats `vms/<vmid>/<name>`. */
export function formatId(id: VmId): string {
  return `vms/${String(id.vmid)}/${id.name}`;
}

/**
 * Parses an ID strictly: three segments, the literal `vms`, a VMID from 100
 * to 999999999 without leading zeros, and a non-empty name. Anything else is
 * Permanent.
 */
export function parseId(provider: string, op: Operation, id: string): VmId {
  if (typeof id !== 'string') throw new TypeError(`${op}: id must be a string`);
  const parts = id.split('/');
  const [lit, vmid, name] = parts;
  if (
    parts.length !== 3 ||
    lit !== 'vms' ||
    vmid === undefined ||
    !VMID_RE.test(vmid) ||
    name === undefined ||
    name === ''
  ) {
    throw permanent(
      provider,
      op,
      `malformed provider ID ${JSON.stringify(id)}: want vms/<vmid>/<name>`,
    );
  }
  return { vmid: Number(vmid), name };
}
