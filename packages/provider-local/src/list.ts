/**
 * ListByTag: every state file in the folder, kept when it carries the
 * installation's mark.
 *
 * @module
 */
import {
  type Instance,
  markedInstances,
  type OperationContext,
  parseMark,
} from '@proxy-op/contract';
import { formatId } from './id.js';
import type { Runtime } from './runtime.js';

/** Every instance of the installation, with ID, UID, creation time and installation. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const records = await rt.seam.listStates(ctx.signal);
  return markedInstances(
    installation,
    records.map((rec) => ({ id: formatId({ name: rec.name }), mark: parseMark(rec.marks) })),
  );
}
