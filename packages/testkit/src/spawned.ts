/**
 * The processes a test suite spawns, tracked so that none outlives it.
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * The processes of one program a test suite started, so that its
 * `afterAll` can make sure they are gone. A pid counts as the program's
 * only while its command line names the program (on Linux, through
 * `/proc`): pids come round again, and what another suite on the machine
 * started under a reused pid is never killed.
 */
export class SpawnedPrograms {
  readonly #program: string;
  /** The pids started so far; add each one as it is spawned. */
  readonly pids = new Set<number>();

  /** `program` is the script or binary each process was started with. */
  constructor(program: string) {
    this.#program = program;
  }

  /**
   * Whether a process of the program with this pid exists and is not a zombie: on Linux a pid
   * that another program has taken since (its command line does not name the program) counts
   * as gone.
   */
  running(pid: number): boolean {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const st = text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3);
      // A zombie leader whose other threads still exit holds its sockets: not gone yet.
      if (st === 'Z' || st === 'X') return readdirSync(`/proc/${pid}/task`).length > 1;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // An empty command line is a process on its way out (its memory gone, not yet its sockets).
      return cmdline === '' || cmdline.split('\0').includes(this.#program);
    } catch {
      try {
        process.kill(pid, 0);
        return !existsSync('/proc/self/stat');
      } catch {
        return false;
      }
    }
  }

  /** Kills every process of {@link pids} (SIGKILL) and waits until they are gone. */
  async killAll(): Promise<void> {
    for (const pid of this.pids) {
      // Most of these exited long ago, and pids come round again (32768 of them by default on
      // Linux): only a process that still runs the program is ours to kill.
      if (!this.running(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && [...this.pids].some((pid) => this.running(pid))) {
      await new Promise((r) => setTimeout(r, 20));
    }
    this.pids.clear();
  }
}
