/**
 * Delete: stop the process, wait for it to exit, remove its state file and
 * logs (`deleteReturn: waits`); leave alone what is not the caller's.
 *
 * @module
 */
import { type DeleteContext, deletionProblem, parseMark } from '@proxy-op/contract';
import type { LocalId } from './id.js';
import type { Runtime } from './runtime.js';

/** Deletes the caller's instance at `id`; succeeds when there is none. */
export async function deleteInstance(rt: Runtime, id: LocalId, ctx: DeleteContext): Promise<void> {
  const { name } = id;
  const rec = await rt.seam.readState(name, ctx.signal);
  if (rec === undefined) return;
  const problem = deletionProblem(parseMark(rec.marks), ctx.owner);
  if (problem !== undefined) {
    rt.log.debug({ name, problem }, 'local instance not the caller’s; left alone');
    return;
  }
  if (rec.pid !== undefined) await rt.seam.kill(name, rec.pid, ctx.signal);
  await rt.seam.removeState(name, ctx.signal);
}
