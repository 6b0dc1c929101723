/**
 * Delete: the server's deletion submitted, then waited for (profile
 * `deleteReturn: waits`: the API answers with an action and the server
 * reads `deleting` until it is gone, a few seconds), then its firewall
 * deleted. What is not the caller's is left alone. A Delete that finds the
 * server already `deleting` (an earlier attempt was cancelled) waits for
 * it the same way.
 *
 * @module
 */
import { type DeleteContext, deletionProblem } from '@proxy-op/contract';
import { removeFirewall } from './firewall.js';
import type { HetznerId } from './id.js';
import { readMark } from './labels.js';
import type { Runtime } from './runtime.js';

/** Deletes the server and its firewall, leaving alone what is not the caller's. */
export async function deleteInstance(
  rt: Runtime,
  id: HetznerId,
  ctx: DeleteContext,
): Promise<void> {
  const server = await rt.seam.findServer(id.name, ctx.signal);
  if (server !== undefined) {
    const problem = deletionProblem(readMark(server.labels, server.created), ctx.owner);
    if (problem !== undefined) {
      rt.log.debug({ name: id.name, problem }, 'hetzner server not the caller’s; left alone');
      return;
    }
    if (server.status !== 'deleting') {
      const action = await rt.seam.deleteServer(server.id, ctx.signal);
      rt.log.debug(
        { name: id.name, serverId: server.id, action: action?.id },
        'hetzner delete accepted',
      );
    }
    await waitGone(rt, id.name, server.id, ctx);
  }
  await removeFirewall(rt, id.name, ctx);
}

/**
 * Waits until the server is gone (`GET /servers/{id}` answers 404),
 * looking every `timeouts.pollMs`; past `timeouts.deleteWaitMs` it is
 * Transient (the next Delete waits again).
 */
async function waitGone(rt: Runtime, name: string, serverId: number, ctx: DeleteContext) {
  const { pollMs, deleteWaitMs } = rt.config.timeouts;
  const deadline = Date.now() + deleteWaitMs;
  for (;;) {
    await ctx.sleep(pollMs);
    const server = await rt.seam.getServer(serverId, ctx.signal);
    if (server === undefined) return;
    if (Date.now() >= deadline) {
      throw ctx.transient(
        `server ${name} is still there (${server.status}) ${deleteWaitMs} ms after its deletion was submitted; try again`,
      );
    }
  }
}
