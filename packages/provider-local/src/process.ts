/**
 * The production seam of the `local` provider: real state files in
 * `config.stateDir` and real, detached proxy processes on this machine.
 * Every method honours its signal: the file calls that take one get it,
 * and a wait on what cannot be cancelled (a spawn that must record its
 * pid, a folder call on a stuck mount, a socket being bound) stops when
 * the signal fires, through the contract's `abortable`.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { abortable } from '@proxy-op/contract';
import { probeHealth, proxyServerPath } from '@proxy-op/forward-proxy';
import type { LocalConfig } from './config.js';
import { LocalError } from './errors.js';
import { type InstanceRecord, parseRecord, passwordPath, STATE_FILE, statePath } from './record.js';
import { ANSWER_POLL_MS, KILL_GRACE_MS, type LocalSeam } from './seam.js';

/** The proxy program each instance runs: the program of `@proxy-op/forward-proxy`. */
export function proxyProgramPath(): string {
  return proxyServerPath();
}

/** The production seam: real files in `config.stateDir` and real processes. */
export function createProcessSeam(config: LocalConfig): LocalSeam {
  const dir = config.stateDir;
  const children = new Map<number, ChildProcess>();
  const program = proxyProgramPath();

  const read = async (name: string, signal?: AbortSignal) => {
    let text: string;
    try {
      text = await readFile(statePath(dir, name), { encoding: 'utf8', signal });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return parseRecord(name, text);
  };

  const atomically = async (
    name: string,
    target: string,
    contents: string | Uint8Array,
    signal?: AbortSignal,
  ) => {
    await started(signal, () => mkdir(dir, { recursive: true, mode: 0o700 }));
    // Unique per write: two writes of one file can overlap (a cancelled call carried out
    // while its retry writes), and a shared temporary name would lose one rename.
    const tmp = join(dir, `.${name}.${process.pid}.${randomUUID()}.tmp`);
    try {
      await writeFile(tmp, contents, { signal, mode: 0o600 });
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
    await started(signal, () => rename(tmp, target));
  };
  const write = (record: InstanceRecord, signal?: AbortSignal) =>
    atomically(
      record.name,
      statePath(dir, record.name),
      `${JSON.stringify(record, null, 2)}\n`,
      signal,
    );

  // The spawn goes on whatever happens to its caller, until the pid is in the state file.
  const start = async (record: InstanceRecord): Promise<number> => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const log = openSync(join(dir, `${record.name}.log`), 'a');
    let child: ChildProcess;
    try {
      child = spawn(config.nodePath, [program, '--config', statePath(dir, record.name)], {
        detached: true,
        stdio: ['ignore', log, log],
        env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' },
      });
    } finally {
      closeSync(log);
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.unref();
    const pid = child.pid as number;
    children.set(pid, child);
    child.once('exit', () => children.delete(pid));
    await write({ ...record, phase: 'running', pid });
    return pid;
  };

  return {
    readState: read,
    writeState: write,
    writePasswordFile(name, contents, signal) {
      return atomically(name, passwordPath(dir, name), contents, signal);
    },
    removeState(name, signal) {
      // Once begun, the removal finishes (no log outlives its state file); the caller stops waiting.
      const remove = async () => {
        for (const f of [`${name}.json`, `${name}.passwd`, `${name}.log`, `${name}.access.log`]) {
          await rm(join(dir, f), { force: true });
        }
      };
      return started(signal, remove);
    },
    async listStates(signal) {
      let names: string[];
      try {
        names = await started(signal, () => readdir(dir));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const out: InstanceRecord[] = [];
      for (const f of names) {
        const name = STATE_FILE.exec(f)?.[1];
        if (name === undefined) continue;
        const r = await read(name, signal);
        if (r !== undefined) out.push(r);
      }
      return out;
    },
    spawn(record, signal) {
      return started(signal, () => start(record));
    },
    alive(name, pid, signal) {
      return isAlive(pid, statePath(dir, name), signal);
    },
    probe(name, address, port, signal) {
      return probeHealth(name, address, port, config.timeouts.probeMs, signal);
    },
    async awaitAnswering(name, pid, address, port, ms, signal) {
      const file = statePath(dir, name);
      const deadline = Date.now() + ms;
      for (;;) {
        if (await probeHealth(name, address, port, config.timeouts.probeMs, signal)) {
          return 'answering';
        }
        if (!(await isAlive(pid, file, signal))) return 'exited';
        if (Date.now() >= deadline) return 'timeout';
        await abortable(delay(ANSWER_POLL_MS), signal);
      }
    },
    async kill(name, pid, signal) {
      const file = statePath(dir, name);
      if (!(await isAlive(pid, file, signal))) return;
      signalProcess(pid, 'SIGTERM');
      if (await waitExit(pid, file, config.timeouts.stopMs, signal)) return;
      signalProcess(pid, 'SIGKILL');
      if (await waitExit(pid, file, KILL_GRACE_MS, signal)) return;
      throw new LocalError('STOP_TIMEOUT', `process ${pid} did not exit after SIGKILL`);
    },
    logTail(name, signal) {
      return started(signal, () => readTail(join(dir, `${name}.log`)));
    },
    bindable(address, port, signal) {
      return started(signal, () => tryBind(address, port));
    },
    async checkStateDir(signal) {
      await started(signal, () => mkdir(dir, { recursive: true, mode: 0o700 }));
      if (!(await started(signal, () => stat(dir))).isDirectory()) throw notADirectory(dir);
      const probe = join(dir, `.check-${process.pid}-${Date.now()}`);
      await writeFile(probe, 'ok\n', { signal });
      await started(signal, () => rm(probe, { force: true }));
    },
  };
}

/**
 * Starts `work` unless `signal` has fired, and waits for it until `signal`
 * fires (then rejects with the signal's reason). `work` itself is not
 * stopped: once begun it is carried out, so use it for what cannot be
 * cancelled, or must not be (a spawn that records its pid).
 */
function started<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return abortable(work(), signal);
}

/** The last three lines of a log file, joined with ` | `; empty when it cannot be read. */
async function readTail(file: string): Promise<string> {
  try {
    const f = await open(file, 'r');
    try {
      const { size } = await f.stat();
      const len = Math.min(size, 2048);
      const buf = Buffer.alloc(len);
      await f.read(buf, 0, len, size - len);
      const lines = buf.toString('utf8').trim().split('\n');
      return lines.slice(-3).join(' | ');
    } finally {
      await f.close();
    }
  } catch {
    return '';
  }
}

/** The operating-system error of a state folder that is something else than a folder. */
function notADirectory(dir: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, stat '${dir}'`), {
    code: 'ENOTDIR',
    syscall: 'stat',
    path: dir,
  });
}

function signalProcess(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/**
 * Whether `pid` runs and is the proxy reading `stateFile`: on Linux the
 * command line must name the file, and a zombie counts as gone once its
 * last thread has exited (so its sockets are closed); elsewhere only
 * existence is checked. Rejects with the signal's reason once it fired.
 */
async function isAlive(
  pid: number,
  stateFile: string,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (existsSync('/proc/self/stat')) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, { encoding: 'utf8', signal });
      const st = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      // A zombie leader may still have threads exiting (and its sockets open): it is gone
      // only once it is the last task left.
      if (st === 'Z' || st === 'X') {
        return (await started(signal, () => readdir(`/proc/${pid}/task`))).length > 1;
      }
      const cmdline = await readFile(`/proc/${pid}/cmdline`, { encoding: 'utf8', signal });
      // An empty command line is a process already exiting (its memory is gone, its sockets
      // not yet): still there. Another command line is another program that got the pid.
      return cmdline === '' || cmdline.split('\0').includes(stateFile);
    } catch {
      if (signal?.aborted) throw signal.reason;
      return false;
    }
  }
  signal?.throwIfAborted();
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process is gone within `ms`; polls every 20 ms, stops when `signal` fires. */
async function waitExit(
  pid: number,
  stateFile: string,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await isAlive(pid, stateFile, signal))) return true;
    if (Date.now() >= deadline) return false;
    await abortable(delay(20), signal);
  }
}

/** Binds `address:port` and lets go: true when free, false when in use. */
function tryBind(address: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(false);
      else reject(err);
    });
    server.listen({ host: address, port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}
