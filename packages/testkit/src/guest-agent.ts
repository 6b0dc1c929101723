/**
 * A QEMU guest agent and its guest's files, for backend doubles (the
 * libvirt model, the Proxmox double), which wrap its answers and failures
 * in their own formats. It answers the commands the providers use as
 * qemu-ga 7 does: `guest-ping`, `guest-file-open`/`-read`/`-write`/`-close`,
 * `guest-exec` and `guest-exec-status` (a program shows as running on the
 * first status ask, as a real one takes a moment). `guest-exec` runs the two
 * programs the providers run, with their coreutils/busybox meaning:
 * `/bin/cp -p SRC DST` (owner, group and mode kept) and `/bin/mv -f SRC DST`;
 * any other program fails to start, as a missing binary does.
 *
 * @module
 */

/** One file in the guest. */
export interface GuestFile {
  data: Buffer;
  mode: number;
  uid: number;
  gid: number;
}

/** A command the agent refused, with the agent's own description (`error.desc`). */
export class GuestAgentFailure extends Error {
  override readonly name = 'GuestAgentFailure';
  constructor(
    /** The command, as `guest-...`. */
    readonly command: string,
    /** The agent's description of the failure. */
    readonly desc: string,
  ) {
    super(`${command}: ${desc}`);
  }
}

interface Exec {
  exitcode: number;
  err: string;
  pending: number;
}

/** A guest's agent and files. */
export class GuestAgentModel {
  /** The guest's files by absolute path. */
  readonly files = new Map<string, GuestFile>();
  /** Every command the agent ran, by name (never its arguments). */
  readonly commands: string[] = [];
  readonly #handles = new Map<number, { path: string }>();
  readonly #execs = new Map<number, Exec>();
  #next = 1000;

  /**
   * Puts a proxy's password file at `path` as the operator's default
   * cloud-init leaves it: root-owned, of the proxy group (13 on Debian), 0640.
   */
  placePasswordFile(path: string, data: Uint8Array): void {
    this.files.set(path, { data: Buffer.from(data), mode: 0o640, uid: 0, gid: 13 });
  }

  /** The text of the file at `path`; throws naming `who` when the guest has none. */
  text(path: string, who: string): string {
    const f = this.files.get(path);
    if (f === undefined) throw new Error(`harness: the guest of ${who} has no ${path}`);
    return f.data.toString('utf8');
  }

  /** Open file handles (a leak shows here). */
  openHandles(): number {
    return this.#handles.size;
  }

  /** Runs one command: its `return` value, or a {@link GuestAgentFailure}. */
  run(execute: string, a: Record<string, unknown> = {}): unknown {
    this.commands.push(execute);
    const fail = (desc: string): never => {
      throw new GuestAgentFailure(execute, desc);
    };
    const handle = () => {
      const h = this.#handles.get(Number(a.handle));
      if (h === undefined) fail(`handle '${String(a.handle)}' has not been found`);
      return h as { path: string };
    };
    switch (execute) {
      case 'guest-ping':
        return {};
      case 'guest-file-open': {
        const path = String(a.path);
        const mode = String(a.mode ?? 'r');
        const f = this.files.get(path);
        const refused = () =>
          fail(`failed to open file '${path}' (mode: '${mode}'): No such file or directory`);
        if (mode.startsWith('r') && f === undefined) refused();
        if (mode.startsWith('w')) {
          if (f !== undefined) f.data = Buffer.alloc(0);
          else if (!this.#dirExists(path)) refused();
          else this.files.set(path, { data: Buffer.alloc(0), mode: 0o644, uid: 0, gid: 0 });
        }
        const h = this.#next++;
        this.#handles.set(h, { path });
        return h;
      }
      case 'guest-file-write': {
        const f = this.files.get(handle().path) as GuestFile;
        const buf = Buffer.from(String(a['buf-b64']), 'base64');
        f.data = Buffer.concat([f.data, buf]);
        return { count: buf.byteLength, eof: false };
      }
      case 'guest-file-read': {
        const f = this.files.get(handle().path) as GuestFile;
        return { count: f.data.byteLength, 'buf-b64': f.data.toString('base64'), eof: true };
      }
      case 'guest-file-close':
        handle();
        this.#handles.delete(Number(a.handle));
        return {};
      case 'guest-exec': {
        const path = String(a.path);
        const args = Array.isArray(a.arg) ? a.arg.map(String) : [];
        const ran = this.#exec(path, args);
        if (ran === undefined) {
          fail(
            `Guest agent command failed, error was 'Failed to execute child process “${path}” (No such file or directory)'`,
          );
        }
        const pid = this.#next++;
        this.#execs.set(pid, { ...(ran as Omit<Exec, 'pending'>), pending: 1 });
        return { pid };
      }
      case 'guest-exec-status': {
        const pid = Number(a.pid);
        const e = this.#execs.get(pid);
        if (e === undefined) return fail("Invalid parameter 'pid'");
        if (e.pending > 0) {
          e.pending--;
          return { exited: false };
        }
        this.#execs.delete(pid);
        return {
          exited: true,
          exitcode: e.exitcode,
          ...(e.err === '' ? {} : { 'err-data': Buffer.from(e.err).toString('base64') }),
        };
      }
      default:
        return fail(`The command ${execute} has not been found`);
    }
  }

  #dirExists(path: string): boolean {
    const dir = path.slice(0, path.lastIndexOf('/') + 1);
    return [...this.files.keys()].some((p) => p.startsWith(dir));
  }

  #exec(path: string, args: string[]): Omit<Exec, 'pending'> | undefined {
    const [flag, src = '', dst = ''] = args;
    const cp = path === '/bin/cp' && flag === '-p';
    const mv = path === '/bin/mv' && flag === '-f';
    if ((!cp && !mv) || args.length !== 3) return undefined;
    const f = this.files.get(src);
    if (f === undefined) {
      const program = cp ? 'cp' : 'mv';
      return { exitcode: 1, err: `${program}: cannot stat '${src}': No such file or directory\n` };
    }
    if (mv) this.files.delete(src);
    this.files.set(dst, cp ? { ...f, data: Buffer.from(f.data) } : f);
    return { exitcode: 0, err: '' };
  }
}
