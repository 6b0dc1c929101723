/**
 * The task waiter: Proxmox runs clones, uploads, resizes, starts, stops,
 * destroys and volume deletes as tasks, each named by a UPID.
 *
 * @module
 */
import type { OperationContext } from '@proxy-op/contract';
import { TaskFailedError, TaskTimeoutError } from './errors.js';
import type { Runtime } from './runtime.js';

/** The node a UPID names (`UPID:<node>:...`), or undefined. */
export function upidNode(upid: string): string | undefined {
  return /^UPID:([^:]+):/.exec(upid)?.[1];
}

/**
 * Polls a task every `budgets.poll` until it stops. `OK` and `WARNINGS: n`
 * are success; any other exit status is a {@link TaskFailedError}; running
 * past `budgetMs` is a {@link TaskTimeoutError} (the task keeps running on
 * Proxmox). The node comes from the UPID, `node` when it names none.
 */
export async function waitTask(
  rt: Runtime,
  ctx: OperationContext,
  node: string,
  upid: string,
  budgetMs: number,
): Promise<void> {
  const taskNode = upidNode(upid) ?? node;
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const st = await rt.api.taskStatus({ node: taskNode, upid }, ctx.signal);
    if (st.status === 'stopped') {
      const exit = st.exitstatus ?? '';
      if (exit === 'OK') return;
      if (/^WARNINGS: \d+$/.test(exit)) {
        rt.log.debug({ upid, exitstatus: exit }, 'proxmox task finished with warnings');
        return;
      }
      rt.log.debug({ upid, exitstatus: exit }, 'proxmox task failed');
      throw new TaskFailedError(upid, exit);
    }
    if (Date.now() >= deadline) throw new TaskTimeoutError(upid, budgetMs);
    await ctx.sleep(rt.budgets.poll);
  }
}
