/**
 * The QEMU guest agent of a running domain, through libvirt: commands as
 * JSON, programs run with `guest-exec` (and waited for with
 * `guest-exec-status`), files written with `guest-file-open`, `-write` and
 * `-close`. What goes to the guest (a file's bytes, a program's input) is
 * in the command text only, which the seam never logs.
 *
 * @module
 */
import { AgentTimeout } from '@proxy-op/libvirt-rpc';
import { GuestProgramError } from './errors.js';
import type { Domain, LibvirtSeam } from './seam.js';

/** How often a running guest program is asked whether it has exited, in ms. */
const EXEC_POLL_MS = 50;

/** The agent's JSON reply's `return`; a reply without one is a malformed answer. */
async function command<T>(
  seam: LibvirtSeam,
  dom: Domain,
  execute: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<T> {
  const text = await seam.domainQemuAgentCommand(
    {
      dom,
      command: JSON.stringify({ execute, arguments: args }),
      timeoutSec: AgentTimeout.DEFAULT,
    },
    signal,
  );
  const reply = JSON.parse(text) as { return?: T };
  if (reply === null || typeof reply !== 'object' || !('return' in reply)) {
    throw new TypeError(`an agent reply to ${execute} without "return"`);
  }
  return reply.return as T;
}

/**
 * Runs `program` with `args` in the guest and waits for it to exit;
 * rejects with {@link GuestProgramError} when it exits other than 0.
 */
export async function guestRun(
  seam: LibvirtSeam,
  dom: Domain,
  program: string,
  args: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  const { pid } = await command<{ pid: number }>(
    seam,
    dom,
    'guest-exec',
    { path: program, arg: args, 'capture-output': true },
    signal,
  );
  if (typeof pid !== 'number') throw new TypeError('a guest-exec reply without a pid');
  for (;;) {
    const st = await command<{
      exited: boolean;
      exitcode?: number;
      signal?: number;
      'err-data'?: string;
    }>(seam, dom, 'guest-exec-status', { pid }, signal);
    if (typeof st?.exited !== 'boolean') throw new TypeError('a guest-exec-status without exited');
    if (st.exited) {
      if (st.exitcode === 0) return;
      const err = Buffer.from(st['err-data'] ?? '', 'base64').toString('utf8');
      throw new GuestProgramError(program, st.exitcode, err.split('\n')[0]?.slice(0, 300) ?? '');
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, EXEC_POLL_MS);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

/**
 * Writes `data` to `path` in the guest, truncating it: an existing file
 * keeps its owner and mode, a new one gets the agent's. The handle is
 * closed under `cleanup()`'s signal, also when the write failed or was
 * cancelled.
 */
export async function guestWriteFile(
  seam: LibvirtSeam,
  dom: Domain,
  path: string,
  data: Uint8Array,
  signal: AbortSignal,
  cleanup: () => AbortSignal,
): Promise<void> {
  const handle = await command<number>(seam, dom, 'guest-file-open', { path, mode: 'w' }, signal);
  if (typeof handle !== 'number') throw new TypeError('a guest-file-open reply without a handle');
  try {
    let done = 0;
    // One write usually takes all of it; the agent may take less, and says how much.
    while (done < data.byteLength) {
      const chunk = Buffer.from(data.subarray(done)).toString('base64');
      const { count } = await command<{ count: number }>(
        seam,
        dom,
        'guest-file-write',
        { handle, 'buf-b64': chunk },
        signal,
      );
      if (typeof count !== 'number' || count <= 0) {
        throw new TypeError('a guest-file-write reply without a positive count');
      }
      done += count;
    }
  } finally {
    // Closed even when the write failed or was cancelled: the agent keeps open handles.
    await command(seam, dom, 'guest-file-close', { handle }, cleanup()).catch(() => {});
  }
}
