/**
 * The production seam of the `local` provider: real state files in
 * `config.stateDir` and real, detached proxy processes on this machine.
 * Every file of the folder goes through `@proxy-op/contract/files`: the
 * folder must be private (ours, written by nobody else; made 0700 when
 * missing), files are written atomically through exclusive temporary files
 * (0600), opened and read without following links, and a file that is not
 * a regular file of ours is refused, never written through or trusted.
 * Health checks are asked from the proxy's own address, the health source
 * its record names, so they are answered whatever its `allowedSources` say.
 * Every method honours its signal: the file calls that take one get it,
 * and a wait on what cannot be cancelled (a spawn that must record its
 * pid, a folder call on a stuck mount, a socket being bound) stops when
 * the signal fires, through the contract's `abortable`.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { abortable } from '@proxy-op/contract';
import {
  checkPrivateFolder,
  ensurePrivateFolder,
  openOwnedFile,
  readOwnedFile,
  UnsafePathError,
  writeFileAtomic,
} from '@proxy-op/contract/files';
import { probeHealth, proxyServerPath } from '@proxy-op/forward-proxy';
import type { LocalConfig } from './config.js';
import { LocalError } from './errors.js';
import {
  accessLogPath,
  type InstanceRecord,
  logPath,
  parseRecord,
  passwordPath,
  RECORD_MAX_BYTES,
  STATE_FILE,
  statePath,
} from './record.js';
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

  /** Whether the folder is there, refusing one that is not private. */
  const folderThere = (signal?: AbortSignal) =>
    started(signal, () => checkPrivateFolder(dir, { signal }));
  /** The folder made when missing, refusing one that is not private. */
  const privateFolder = (signal?: AbortSignal) =>
    started(signal, () => ensurePrivateFolder(dir, { signal }));

  /** The record of `name`, the folder already checked; undefined when there is none. */
  const readRecord = async (name: string, signal?: AbortSignal) => {
    let text: string;
    try {
      const bytes = await started(signal, () =>
        readOwnedFile(statePath(dir, name), { maxBytes: RECORD_MAX_BYTES, signal }),
      );
      text = bytes.toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return parseRecord(name, text);
  };
  const read = async (name: string, signal?: AbortSignal) =>
    (await folderThere(signal)) ? readRecord(name, signal) : undefined;

  const atomically = async (
    target: string,
    contents: string | Uint8Array,
    signal?: AbortSignal,
  ) => {
    await privateFolder(signal);
    // Each write has its own temporary file, created exclusively under a random name: two
    // writes of one file can overlap (a cancelled call carried out while its retry writes).
    await started(signal, () => writeFileAtomic(target, contents, { signal }));
  };
  const write = (record: InstanceRecord, signal?: AbortSignal) =>
    atomically(statePath(dir, record.name), `${JSON.stringify(record, null, 2)}\n`, signal);

  // The spawn goes on whatever happens to its caller, until the pid is in the state file.
  const start = async (given: InstanceRecord): Promise<number> => {
    await ensurePrivateFolder(dir);
    const record = await withOwnFiles(given);
    const log = await openOwnedFile(logPath(dir, record.name), 'append');
    let child: ChildProcess;
    let spawned: Promise<void>;
    try {
      child = spawn(config.nodePath, [program, '--config', statePath(dir, record.name)], {
        detached: true,
        stdio: ['ignore', log.fd, log.fd],
        env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' },
      });
      // Listened to before the log is closed: the close takes a turn, the event may come first.
      spawned = new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
    } finally {
      // The child has its own copy of the descriptor; a failed close of ours changes nothing.
      await log.close().catch(() => {});
    }
    await spawned;
    child.unref();
    const pid = child.pid as number;
    children.set(pid, child);
    child.once('exit', () => children.delete(pid));
    await write({ ...record, phase: 'running', pid });
    return pid;
  };

  /**
   * The files the proxy opens by their names, made safe before it starts:
   * the access log created (or checked) as a file of ours, mode 0600; the
   * password file checked to be one of ours. Both are named in the folder
   * whatever the record said, and the record is written again when it named
   * others. In a private folder nobody else can put anything in their place
   * once checked.
   */
  const withOwnFiles = async (record: InstanceRecord): Promise<InstanceRecord> => {
    const { name, auth } = record;
    const own: InstanceRecord = {
      ...record,
      accessLog: accessLogPath(dir, name),
      auth: auth === undefined ? undefined : { ...auth, passwordFile: passwordPath(dir, name) },
    };
    await (await openOwnedFile(own.accessLog, 'append')).close();
    if (own.auth !== undefined) await (await openOwnedFile(own.auth.passwordFile, 'read')).close();
    if (own.accessLog !== record.accessLog || own.auth?.passwordFile !== auth?.passwordFile) {
      await write(own);
    }
    return own;
  };

  return {
    readState: read,
    writeState: write,
    writePasswordFile(name, contents, signal) {
      return atomically(passwordPath(dir, name), contents, signal);
    },
    async ownsPasswordFile(name, signal) {
      try {
        const f = await started(signal, () =>
          openOwnedFile(passwordPath(dir, name), 'read', { signal }),
        );
        await f.close();
        return true;
      } catch (err) {
        if (UnsafePathError.isInstance(err)) return false;
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    },
    async removeState(name, signal) {
      if (!(await folderThere(signal))) return;
      // Once begun, the removal finishes (no log outlives its state file); the caller stops
      // waiting. A link among them is removed, never followed.
      const remove = async () => {
        for (const f of [
          statePath(dir, name),
          passwordPath(dir, name),
          logPath(dir, name),
          accessLogPath(dir, name),
        ]) {
          await rm(f, { force: true });
        }
      };
      return started(signal, remove);
    },
    async listStates(signal) {
      if (!(await folderThere(signal))) return [];
      const names = await started(signal, () => readdir(dir));
      const out: InstanceRecord[] = [];
      for (const f of names) {
        const name = STATE_FILE.exec(f)?.[1];
        if (name === undefined) continue;
        try {
          const r = await readRecord(name, signal);
          if (r !== undefined) out.push(r);
        } catch (err) {
          // Not a regular file of ours: nothing the provider made, so nothing of it is listed.
          if (!UnsafePathError.isInstance(err)) throw err;
        }
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
      return probeHealth(name, address, port, config.timeouts.probeMs, signal, address);
    },
    async awaitAnswering(name, pid, address, port, ms, signal) {
      const file = statePath(dir, name);
      const deadline = Date.now() + ms;
      for (;;) {
        if (await probeHealth(name, address, port, config.timeouts.probeMs, signal, address)) {
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
      return started(signal, () => readTail(logPath(dir, name)));
    },
    bindable(address, port, signal) {
      return started(signal, () => tryBind(address, port));
    },
    async checkStateDir(signal) {
      await privateFolder(signal);
      const probe = join(dir, `.check-${process.pid}-${randomUUID()}`);
      await started(signal, () => writeFileAtomic(probe, 'ok\n', { signal }));
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
    const f = await openOwnedFile(file, 'read');
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
