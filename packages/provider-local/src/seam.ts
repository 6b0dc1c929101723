/**
 * The seam of the `local` provider: one signal-taking method per backend
 * call (state files, processes, sockets), and the production adapter that
 * makes them on this machine.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalConfig } from './config.js';
import type { ProxyLimits } from './proxy.js';

/** Where an instance is in its life, as its state file says. */
export type Phase = 'starting' | 'running' | (string & {});

/** One instance's state file: the proxy's config, its marks and its pid. */
export interface InstanceRecord {
  /** The file format version (1). */
  readonly version: 1;
  /** The instance name (the file is `<name>.json`). */
  readonly name: string;
  /** The ownership mark as key/value pairs; empty when the instance is not proxy-op's. */
  readonly marks: Readonly<Record<string, string>>;
  /** The loopback address the proxy listens on; absent before one is allocated. */
  readonly address?: string | undefined;
  /** The TCP port the proxy listens on. */
  readonly port: number;
  /** CIDRs whose clients may use the proxy. */
  readonly allowedSources: readonly string[];
  /** The access log file (JSON lines). */
  readonly accessLog: string;
  /** The proxy's resource bounds. */
  readonly limits?: Partial<ProxyLimits> | undefined;
  /** `starting` before the process is spawned, `running` after; anything else is unknown. */
  readonly phase: Phase;
  /** The process id, once spawned. */
  readonly pid?: number | undefined;
}

/** A failure of the local backend that is not an operating-system error. */
export class LocalError extends Error {
  constructor(
    /** What failed. */
    readonly code:
      | 'ADDRESS_RANGE_EXHAUSTED'
      | 'START_FAILED'
      | 'START_TIMEOUT'
      | 'STOP_TIMEOUT'
      | 'CALL_TIMEOUT',
    message: string,
  ) {
    super(message);
  }
  override get name(): string {
    return 'LocalError';
  }
}

/** The backend calls of the `local` provider. Every method takes a signal. */
export interface LocalSeam {
  /** Reads `<name>.json`; undefined when there is none. An unreadable file reads as unmarked. */
  readState(name: string, signal?: AbortSignal): Promise<InstanceRecord | undefined>;
  /** Writes `<name>.json` atomically (temporary file, then rename). */
  writeState(record: InstanceRecord, signal?: AbortSignal): Promise<void>;
  /** Removes `<name>.json` and the instance's logs; no error when they are gone. */
  removeState(name: string, signal?: AbortSignal): Promise<void>;
  /** Every state file in the folder. */
  listStates(signal?: AbortSignal): Promise<InstanceRecord[]>;
  /**
   * Spawns the detached proxy process for `record` and records its pid
   * (phase `running`) in the state file before it resolves with the pid, so
   * no process ever runs unrecorded, whatever happens to the caller.
   */
  spawn(record: InstanceRecord, signal?: AbortSignal): Promise<number>;
  /** Whether `pid` is alive and is the proxy of `name`. */
  alive(name: string, pid: number, signal?: AbortSignal): Promise<boolean>;
  /** Whether the proxy of `name` answers its health check on `address:port`. */
  probe(name: string, address: string, port: number, signal?: AbortSignal): Promise<boolean>;
  /** SIGTERM, then SIGKILL after the stop budget; resolves once the process has exited. */
  kill(name: string, pid: number, signal?: AbortSignal): Promise<void>;
  /** The last lines of the instance's diagnostics log, for error messages. */
  logTail(name: string, signal?: AbortSignal): Promise<string>;
  /** Whether `address:port` can be bound now (false when in use; throws when the address cannot be bound at all). */
  bindable(address: string, port: number, signal?: AbortSignal): Promise<boolean>;
  /** Creates the state folder when needed and writes and removes a file in it. */
  checkStateDir(signal?: AbortSignal): Promise<void>;
}

/** The state file of `name` in `stateDir`. */
export function statePath(stateDir: string, name: string): string {
  return join(stateDir, `${name}.json`);
}

/** The proxy program: `proxy-server.js` beside this module, or in `dist/` when running from `src/`. */
export function proxyProgramPath(): string {
  const beside = fileURLToPath(new URL('./proxy-server.js', import.meta.url));
  if (existsSync(beside)) return beside;
  return fileURLToPath(new URL('../dist/proxy-server.js', import.meta.url));
}

const NAME_FILE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\.json$/;

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

  const write = async (record: InstanceRecord, signal?: AbortSignal) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Unique per write: two writes of one record can overlap (a cancelled call carried out
    // while its retry writes), and a shared temporary name would lose one rename.
    const tmp = join(dir, `.${record.name}.${process.pid}.${randomUUID()}.tmp`);
    await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { signal, mode: 0o600 });
    await rename(tmp, statePath(dir, record.name));
  };

  return {
    readState: read,
    writeState: write,
    async removeState(name) {
      for (const f of [`${name}.json`, `${name}.log`, `${name}.access.log`]) {
        await rm(join(dir, f), { force: true });
      }
    },
    async listStates(signal) {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const out: InstanceRecord[] = [];
      for (const f of names) {
        const name = NAME_FILE.exec(f)?.[1];
        if (name === undefined) continue;
        const r = await read(name, signal);
        if (r !== undefined) out.push(r);
      }
      return out;
    },
    async spawn(record) {
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
    },
    async alive(name, pid) {
      return isAlive(pid, statePath(dir, name));
    },
    probe(name, address, port, signal) {
      return probeHealth(name, address, port, config.timeouts.probeMs, signal);
    },
    async kill(name, pid, signal) {
      const file = statePath(dir, name);
      if (!(await isAlive(pid, file))) return;
      signalProcess(pid, 'SIGTERM');
      if (await waitExit(pid, file, config.timeouts.stopMs, signal)) return;
      signalProcess(pid, 'SIGKILL');
      if (await waitExit(pid, file, 2_000, signal)) return;
      throw new LocalError('STOP_TIMEOUT', `process ${pid} did not exit after SIGKILL`);
    },
    async logTail(name) {
      try {
        const f = await open(join(dir, `${name}.log`), 'r');
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
    },
    bindable(address, port, signal) {
      return tryBind(address, port, signal);
    },
    async checkStateDir(signal) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
      const probe = join(dir, `.check-${process.pid}-${Date.now()}`);
      await writeFile(probe, 'ok\n', { signal });
      await rm(probe, { force: true });
    },
  };
}

/** Parses a state file's text; an unreadable one is a record without marks. */
export function parseRecord(name: string, text: string): InstanceRecord {
  try {
    const o = JSON.parse(text) as Partial<InstanceRecord>;
    if (typeof o !== 'object' || o === null) throw new Error('not an object');
    const marks: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.marks ?? {})) if (typeof v === 'string') marks[k] = v;
    return {
      version: 1,
      name,
      marks,
      address: typeof o.address === 'string' ? o.address : undefined,
      port: typeof o.port === 'number' ? o.port : 0,
      allowedSources: Array.isArray(o.allowedSources) ? o.allowedSources : [],
      accessLog: typeof o.accessLog === 'string' ? o.accessLog : '',
      limits: o.limits,
      phase: typeof o.phase === 'string' ? o.phase : 'unknown',
      pid: typeof o.pid === 'number' ? o.pid : undefined,
    };
  } catch {
    return {
      version: 1,
      name,
      marks: {},
      port: 0,
      allowedSources: [],
      accessLog: '',
      phase: 'unknown',
    };
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
 * existence is checked.
 */
async function isAlive(pid: number, stateFile: string): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (existsSync('/proc/self/stat')) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const st = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      // A zombie leader may still have threads exiting (and its sockets open): it is gone
      // only once it is the last task left.
      if (st === 'Z' || st === 'X') return (await readdir(`/proc/${pid}/task`)).length > 1;
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      // An empty command line is a process already exiting (its memory is gone, its sockets
      // not yet): still there. Another command line is another program that got the pid.
      return cmdline === '' || cmdline.split('\0').includes(stateFile);
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitExit(
  pid: number,
  stateFile: string,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await isAlive(pid, stateFile))) return true;
    if (Date.now() >= deadline) return false;
    signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** GET /healthz on the proxy: true when it answers 200 with its own instance name. */
export function probeHealth(
  name: string,
  address: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const req = request({
      host: address,
      port,
      path: '/healthz',
      method: 'GET',
      agent: false,
      timeout: timeoutMs,
      signal,
    });
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.on('error', (err) => {
      if (signal?.aborted) reject(signal.reason);
      else if ((err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') reject(err);
      else resolve(false);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode === 200 && res.headers['x-proxy-op-instance'] === name);
    });
    req.end();
  });
}

/** Binds `address:port` and lets go: true when free, false when in use. */
function tryBind(address: string, port: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
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
