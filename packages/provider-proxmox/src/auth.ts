/**
 * updateAuth (contract §2.1, profile `credentialRotation: in-place`): the
 * new password file goes into the running guest through Proxmox's guest
 * agent endpoints, where the operator's default cloud-init put the first
 * one (`SERVICE_PASSWORD_FILE` of `@proxy-op/squid-config`). A copy of the
 * old file (`cp -p`: owner, group and mode kept, root and the proxy group,
 * 0640) takes the new bytes through `agent/file-write` and is renamed over
 * it (`mv -f`), so Squid's helper, which reads the file again when it
 * changes, never reads half of one.
 *
 * The token needs `VM.GuestAgent.Unrestricted` on the VM (Proxmox VE 9;
 * `VM.Monitor` on 8): `agent/exec` asks for it.
 *
 * @module
 */
import type { OperationContext, ProxyAuth } from '@proxy-op/contract';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import { AGENT_NOT_RUNNING } from './classify.js';
import { ApiError } from './errors.js';
import { markedVm } from './get.js';
import type { ProxmoxId } from './id.js';
import { agentEnabled, type Runtime } from './runtime.js';
import type { VmRef } from './seam.js';

/** Where the new file is made before it is renamed over the old one. */
const STAGED = `${SERVICE_PASSWORD_FILE}.new`;
/** `agent/file-write` takes at most 60 KiB of content, which we send as base64. */
export const MAX_PASSWORD_FILE_BYTES = ((60 * 1024) / 4) * 3;
/** How often a running guest program is asked whether it has exited, in ms. */
const EXEC_POLL_MS = 100;

/** Writes the password file into the VM's guest; see the module comment. */
export async function updateInstanceAuth(
  rt: Runtime,
  id: ProxmoxId,
  auth: ProxyAuth,
  ctx: OperationContext,
): Promise<void> {
  if (auth.passwordFile.byteLength > MAX_PASSWORD_FILE_BYTES) {
    throw ctx.permanent(
      `passwordFile: ${auth.passwordFile.byteLength} bytes, more than the ${MAX_PASSWORD_FILE_BYTES} a Proxmox guest agent write takes; use fewer users in one file`,
    );
  }
  const { node, config } = await markedVm(rt, id, ctx);
  const where = `VM ${id.vmid} (${id.name})`;
  if (!agentEnabled(config.agent)) {
    throw ctx.permanent(
      `${where} has no guest agent in its config: its proxy's credentials can only change with a new VM`,
    );
  }
  const ref = { node, vmid: id.vmid };
  const st = await rt.api.vmStatus(ref, ctx.signal);
  if (st.status !== 'running' || (st.qmpstatus ?? 'running') !== 'running') {
    throw ctx.transient(
      `${where} is not running: its proxy can take a new password file once it runs again`,
    );
  }
  try {
    const copied = await run(rt, ctx, ref, ['/bin/cp', '-p', SERVICE_PASSWORD_FILE, STAGED]);
    if (copied !== undefined) {
      if (/no such file/i.test(copied)) {
        throw ctx.permanent(
          `the guest of ${where} has no ${SERVICE_PASSWORD_FILE}: its proxy was not made with credentials (the operator's default cloud-init writes that file; a cloud-init of your own must too)`,
        );
      }
      throw ctx.transient(
        `copying ${SERVICE_PASSWORD_FILE} in the guest of ${where} failed: ${copied}`,
      );
    }
    const content = Buffer.from(auth.passwordFile).toString('base64');
    await rt.api.agentFileWrite({ ...ref, file: STAGED, content, encode: false }, ctx.signal);
    const moved = await run(rt, ctx, ref, ['/bin/mv', '-f', STAGED, SERVICE_PASSWORD_FILE]);
    if (moved !== undefined) {
      throw ctx.transient(
        `renaming the new password file in the guest of ${where} failed: ${moved}`,
      );
    }
  } catch (err) {
    if (ApiError.isInstance(err) && err.status === 500 && err.apiMessage === AGENT_NOT_RUNNING) {
      throw ctx.transient(
        `the guest agent of ${where} is not running: its proxy can take a new password file once it answers`,
        err,
      );
    }
    throw err;
  }
  rt.log.debug(
    { vmid: id.vmid, name: id.name, node, bytes: auth.passwordFile.byteLength },
    'proxmox password file written in the guest',
  );
}

/**
 * Runs `command` in the guest and waits for it to exit: undefined when it
 * exited 0, else the first line of what it wrote to stderr (or its exit).
 */
async function run(
  rt: Runtime,
  ctx: OperationContext,
  ref: VmRef,
  command: readonly string[],
): Promise<string | undefined> {
  const { pid } = await rt.api.agentExec({ ...ref, command }, ctx.signal);
  const deadline = Date.now() + rt.budgets.guestExec;
  for (;;) {
    const st = await rt.api.agentExecStatus({ ...ref, pid }, ctx.signal);
    if (st.exited) {
      if (st.exitcode === 0) return undefined;
      const line = (st['err-data'] ?? '').split('\n')[0]?.slice(0, 300) ?? '';
      return line !== '' ? line : `${command[0]} exited with ${st.exitcode ?? 'a signal'}`;
    }
    if (Date.now() >= deadline) {
      return `${command[0]} had not exited after ${rt.budgets.guestExec / 1000} s`;
    }
    await ctx.sleep(EXEC_POLL_MS);
  }
}
