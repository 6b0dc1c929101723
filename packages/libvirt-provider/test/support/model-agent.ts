// The QEMU guest agent of a model domain: a guest file system and the agent commands the engine
// uses, answered as qemu-ga 7 does through libvirt 9 (the stack suite runs the same updateAuth
// against the real agent of the test guest, and libvirt-rpc's guest test checks the agent's
// replies and errors through virsh). guest-exec runs the two programs the engine runs,
// with their coreutils/busybox meaning: `cp -p SRC DST` (owner, group and mode kept) and
// `mv -f SRC DST`; any other program fails to start, as a missing binary does.
import { ErrorCode, ErrorDomain } from '@proxy-op/libvirt-rpc';
import { libvirtError } from './model-errors.js';

/** One file in the guest. */
export interface GuestFile {
  data: Buffer;
  mode: number;
  uid: number;
  gid: number;
}

interface Exec {
  exitcode: number;
  err: string;
  /** Status asks left before it shows exited (a real program takes a moment). */
  pending: number;
}

/** The agent's error, as libvirt passes it on. */
function agentError(cmd: string, desc: string) {
  return libvirtError(
    ErrorCode.ERR_INTERNAL_ERROR,
    ErrorDomain.FROM_QEMU,
    `internal error: unable to execute QEMU agent command '${cmd}': ${desc}`,
  );
}

/** A guest's agent and files. */
export class ModelGuestAgent {
  /** The guest's files by absolute path. */
  readonly files = new Map<string, GuestFile>();
  /** Every command the agent ran, by name (never its arguments). */
  readonly commands: string[] = [];
  readonly #handles = new Map<number, { path: string }>();
  readonly #execs = new Map<number, Exec>();
  #next = 1000;

  /** Open file handles (a leak shows here). */
  openHandles(): number {
    return this.#handles.size;
  }

  /** Answers one command's JSON text with the agent's JSON reply text. */
  run(text: string): string {
    let req: { execute?: unknown; arguments?: Record<string, unknown> };
    try {
      req = JSON.parse(text) as typeof req;
    } catch {
      throw libvirtError(
        ErrorCode.ERR_INTERNAL_ERROR,
        ErrorDomain.FROM_QEMU,
        'internal error: cannot parse json',
      );
    }
    const cmd = String(req.execute);
    const a = req.arguments ?? {};
    this.commands.push(cmd);
    const ok = (v: unknown) => JSON.stringify({ return: v });
    switch (cmd) {
      case 'guest-ping':
        return ok({});
      case 'guest-file-open': {
        const path = String(a.path);
        const mode = String(a.mode ?? 'r');
        const f = this.files.get(path);
        if (mode === 'r' && f === undefined) {
          throw agentError(
            cmd,
            `failed to open file '${path}' (mode: 'r'): No such file or directory`,
          );
        }
        if (mode === 'w') {
          if (f === undefined) {
            if (!this.#dirExists(path)) {
              throw agentError(
                cmd,
                `failed to open file '${path}' (mode: 'w'): No such file or directory`,
              );
            }
            this.files.set(path, { data: Buffer.alloc(0), mode: 0o644, uid: 0, gid: 0 });
          } else f.data = Buffer.alloc(0);
        }
        const handle = this.#next++;
        this.#handles.set(handle, { path });
        return ok(handle);
      }
      case 'guest-file-write': {
        const h = this.#handles.get(Number(a.handle));
        if (h === undefined)
          throw agentError(cmd, `handle '${String(a.handle)}' has not been found`);
        const f = this.files.get(h.path) as GuestFile;
        const buf = Buffer.from(String(a['buf-b64']), 'base64');
        f.data = Buffer.concat([f.data, buf]);
        return ok({ count: buf.byteLength, eof: false });
      }
      case 'guest-file-read': {
        const h = this.#handles.get(Number(a.handle));
        if (h === undefined)
          throw agentError(cmd, `handle '${String(a.handle)}' has not been found`);
        const f = this.files.get(h.path) as GuestFile;
        return ok({ count: f.data.byteLength, 'buf-b64': f.data.toString('base64'), eof: true });
      }
      case 'guest-file-close': {
        const handle = Number(a.handle);
        if (!this.#handles.delete(handle)) {
          throw agentError(cmd, `handle '${String(a.handle)}' has not been found`);
        }
        return ok({});
      }
      case 'guest-exec': {
        const pid = this.#next++;
        this.#execs.set(pid, {
          ...this.#exec(String(a.path), (a.arg as string[]) ?? []),
          pending: 1,
        });
        return ok({ pid });
      }
      case 'guest-exec-status': {
        const pid = Number(a.pid);
        const e = this.#execs.get(pid);
        if (e === undefined) throw agentError(cmd, `Invalid parameter 'pid'`);
        if (e.pending > 0) {
          e.pending--;
          return ok({ exited: false });
        }
        this.#execs.delete(pid);
        return ok({
          exited: true,
          exitcode: e.exitcode,
          ...(e.err === '' ? {} : { 'err-data': Buffer.from(e.err).toString('base64') }),
        });
      }
      default:
        throw agentError(cmd, `The command ${cmd} has not been found`);
    }
  }

  #dirExists(path: string): boolean {
    const dir = path.slice(0, path.lastIndexOf('/') + 1);
    return [...this.files.keys()].some((p) => p.startsWith(dir));
  }

  #exec(path: string, args: string[]): Omit<Exec, 'pending'> {
    const [flag, src = '', dst = ''] = args;
    if (path === '/bin/cp' && flag === '-p' && args.length === 3) {
      const f = this.files.get(src);
      if (f === undefined) {
        return { exitcode: 1, err: `cp: cannot stat '${src}': No such file or directory\n` };
      }
      this.files.set(dst, { ...f, data: Buffer.from(f.data) });
      return { exitcode: 0, err: '' };
    }
    if (path === '/bin/mv' && flag === '-f' && args.length === 3) {
      const f = this.files.get(src);
      if (f === undefined) {
        return {
          exitcode: 1,
          err: `mv: cannot stat '${src}': No such file or directory\n`,
        };
      }
      this.files.delete(src);
      this.files.set(dst, f);
      return { exitcode: 0, err: '' };
    }
    throw agentError(
      'guest-exec',
      `Guest agent command failed, error was 'Failed to execute child process “${path}” (No such file or directory)'`,
    );
  }
}
