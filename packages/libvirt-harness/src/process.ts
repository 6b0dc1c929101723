/**
 * The daemons the harness starts: where their binaries are, waiting for
 * them and stopping them, and cleaning up after them when their owner dies.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, readlink, rm, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

/** Where the Debian packages put the daemons. */
export const BINARIES = {
  libvirtd: '/usr/sbin/libvirtd',
  virtlogd: '/usr/sbin/virtlogd',
  sshd: '/usr/sbin/sshd',
  sshKeygen: '/usr/bin/ssh-keygen',
  virsh: '/usr/bin/virsh',
} as const;

/** Polls `ok` until it holds; fails when the child exits or the time runs out (then kills it). */
export async function waitFor(
  what: string,
  ok: () => boolean | Promise<boolean>,
  child: ChildProcess,
  timeoutMs: number,
  log: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}):\n${await log()}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${what} not ready within ${timeoutMs} ms:\n${await log()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the child exited. */
export async function stopChild(child: ChildProcess, timeoutMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** A file's text, or empty when it cannot be read. */
export async function readOr(path: string): Promise<string> {
  return readFile(path, 'utf8').catch(() => '');
}

/**
 * A process that outlives its owner only to clean up after it. It waits on
 * a pipe from the owner; when the pipe closes without a word (the owner was
 * killed, crashed, or a test runner gave up on it), it kills every process
 * whose command line names `dir`, that runs in one of the mount or network
 * namespaces it was told of, or that a PID file in one of its `pidDirs` names (a
 * daemon's guests keep running without the daemon, in namespaces of their
 * own), then removes `dir` unless told to keep it. It runs in a session
 * of its own, so a signal to the owner's process group does not reach it.
 */
export interface Sentinel {
  /**
   * Kills, on cleanup, the processes of `pid`'s mount namespace (or, with
   * `net`, its network namespace: daemons that detach, such as dnsmasq, stay
   * in it) too.
   */
  watchNamespaceOf(pid: number, kind?: 'mnt' | 'net'): Promise<void>;
  /** Stands down for good: the owner cleaned up itself. */
  disarm(): void;
}

// Node, not a shell: a shell would fork a few programs for each of the
// machine's processes, which takes seconds on a loaded machine. The
// directory comes in the environment, so the sentinel's own command line
// never matches it.
const SENTINEL_SCRIPT = `
const fs = require('node:fs');
const dir = process.env.DIR;
const namespaces = new Set();
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buffered += d;
  for (let i = buffered.indexOf('\\n'); i >= 0; i = buffered.indexOf('\\n')) {
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    if (line === 'disarm') process.exit(0);
    if (line.startsWith('ns ')) namespaces.add(line.slice(3));
  }
});
process.stdin.on('end', () => {
  // Never this machine's own namespace: that would be every process.
  namespaces.delete(fs.readlinkSync('/proc/self/ns/mnt'));
  namespaces.delete(fs.readlinkSync('/proc/self/ns/net'));
  const killed = [];
  // PID files of processes that left both (QEMU guests run in a namespace
  // of their own): each names its process, whose command line names it back.
  for (const d of (process.env.PID_DIRS || '').split(':').filter(Boolean)) {
    let files = [];
    try {
      files = fs.readdirSync(d).filter((f) => f.endsWith('.pid'));
    } catch {}
    for (const f of files) {
      try {
        const pid = Number(fs.readFileSync(d + '/' + f, 'utf8').trim());
        if (fs.readFileSync('/proc/' + pid + '/cmdline').includes(f.slice(0, -4))) {
          process.kill(pid, 'SIGKILL');
          killed.push(String(pid));
        }
      } catch {}
    }
  }
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\\d+$/.test(p) || Number(p) === process.pid) continue;
    let hit;
    try {
      const ns = (kind) => {
        try {
          return fs.readlinkSync('/proc/' + p + '/ns/' + kind);
        } catch {
          return '';
        }
      };
      hit = namespaces.has(ns('mnt')) || namespaces.has(ns('net'))
        || fs.readFileSync('/proc/' + p + '/cmdline').includes(dir);
    } catch {
      continue;
    }
    if (!hit) continue;
    try {
      process.kill(Number(p), 'SIGKILL');
      killed.push(p);
    } catch {}
  }
  const gone = (p) => {
    try {
      return fs.readFileSync('/proc/' + p + '/stat', 'utf8').split(') ')[1].startsWith('Z');
    } catch {
      return true;
    }
  };
  const deadline = Date.now() + 5000;
  const finish = () => {
    if (!killed.every(gone) && Date.now() < deadline) return setTimeout(finish, 50);
    if (process.env.REMOVE === '1') {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    }
    process.exit(0);
  };
  finish();
});
`;

/** Starts a {@link Sentinel} for what lives in `dir`. */
export function startSentinel(
  dir: string,
  opts: {
    removeDir: boolean;
    /** Dirs of `<name>.pid` files whose processes are killed too (when their command line names `<name>`). */
    pidDirs?: readonly string[];
  },
): Sentinel {
  const child = spawn(process.execPath, ['--input-type=commonjs', '-e', SENTINEL_SCRIPT], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    env: {
      DIR: dir,
      PID_DIRS: (opts.pidDirs ?? []).join(':'),
      REMOVE: opts.removeDir ? '1' : '0',
    },
  });
  const pipe = child.stdin as Socket;
  pipe.on('error', () => {});
  // Neither the sentinel nor its pipe keeps the owner's event loop alive.
  child.unref();
  pipe.unref();
  let armed = true;
  return {
    async watchNamespaceOf(pid, kind = 'mnt') {
      const ns = await readlink(`/proc/${pid}/ns/${kind}`);
      // A process in this one's own namespace has none to be told of.
      if (ns === (await readlink(`/proc/self/ns/${kind}`))) return;
      if (armed) pipe.write(`ns ${ns}\n`);
    },
    disarm() {
      if (!armed) return;
      armed = false;
      pipe.end('disarm\n');
    },
  };
}

/**
 * Takes the lock file at `file` (holding this process's pid), or waits
 * while a live process holds it. Resolves with its release, or undefined
 * when `ready()` came true meanwhile (the other build finished). A lock
 * whose process is gone is taken over.
 */
export async function lockFile(
  file: string,
  ready: () => boolean,
): Promise<(() => Promise<void>) | undefined> {
  for (;;) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (!alive(owner)) {
      await rm(file, { force: true });
      continue;
    }
    if (ready()) return undefined;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Whether a process with this pid exists (signal 0 reaches it). */
export function alive(pid: number): boolean {
  if (!(pid > 0)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
