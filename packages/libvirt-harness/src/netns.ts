/**
 * A network namespace for a test's hosts: nothing in it is routed to this
 * machine's network, and everything started in it is gone when it stops or
 * when the process that made it dies.
 *
 * @module
 */
import { type ChildProcess, execFile, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startSentinel } from './process.js';

const exec = promisify(execFile);

/** A running {@link startNetworkNamespace}. */
export interface NetworkNamespace {
  /** The process holding the namespace (and a mount namespace of its own, with its sysfs). */
  readonly pid: number;
  /** The namespace's file (`/proc/<pid>/ns/net`). */
  readonly path: string;
  /**
   * The program and arguments that run `command` in the namespace (through
   * `nsenter`), in `cwd` (this process's working dir by default).
   */
  command(command: string, args: readonly string[], cwd?: string): [string, string[]];
  /** Runs a command in the namespace to its end; rejects on a non-zero exit. */
  exec(
    command: string,
    args: readonly string[],
    opts?: { timeoutMs?: number },
  ): Promise<{ stdout: string; stderr: string }>;
  /** Starts a command in the namespace. */
  spawn(command: string, args: readonly string[], opts?: SpawnOptions): ChildProcess;
  /** Kills the holder; the namespace goes once the last process in it has exited. */
  stop(): Promise<void>;
}

/** The pids of the processes in the network namespace `ns` (a `/proc/<pid>/ns/net` link's text). */
export async function pidsIn(ns: string): Promise<number[]> {
  const found: number[] = [];
  for (const p of await readdir('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    if ((await readlink(`/proc/${p}/ns/net`).catch(() => '')) === ns) found.push(Number(p));
  }
  return found;
}

/** Kills every process left in the network namespace `ns`, and waits (5 s at most) until none is. */
async function killAllIn(ns: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (let left = await pidsIn(ns); left.length > 0; left = await pidsIn(ns)) {
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts a process in new network and mount namespaces (`unshare`) that
 * holds them: loopback up, a sysfs of the new network namespace mounted over
 * /sys so tools see its devices, nothing else. Commands run in it through
 * `nsenter` into both. `stop()` kills every process left in the network
 * namespace; a sentinel does the same, and kills what is in the mount
 * namespace, if this process dies without `stop()`. Needs root.
 */
export async function startNetworkNamespace(): Promise<NetworkNamespace> {
  // The cgroup hierarchies under /sys/fs/cgroup move onto the new sysfs (QEMU's cgroups are made
  // there), through an empty dir that is removed once they have moved.
  const park = await mkdtemp(join(tmpdir(), 'proxy-op-netns-'));
  const script = [
    'set -e',
    `mount --rbind /sys/fs/cgroup "${park}"`,
    'mount -t sysfs sysfs /sys',
    `mount --move "${park}" /sys/fs/cgroup`,
    'ip link set lo up',
    'echo ready',
    'exec sleep infinity',
  ].join('\n');
  const holder = spawn(
    'unshare',
    ['--net', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  holder.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = once(holder, 'exit');
  const ready = new Promise<void>((resolve, reject) => {
    holder.stdout?.setEncoding('utf8').once('data', () => resolve());
    holder.once('exit', (code) =>
      reject(new Error(`network namespace holder exited (${code}): ${stderr}`)),
    );
    holder.once('error', reject);
  });
  try {
    await ready;
  } finally {
    await rm(park, { recursive: true, force: true });
  }
  const pid = holder.pid as number;
  const sentinel = startSentinel(`/proc/${pid}/ns`, { removeDir: false });
  // Everything in the holder's namespaces goes with it: what runs through nsenter, and the
  // daemons that detach from whoever started them (libvirt's dnsmasq).
  await sentinel.watchNamespaceOf(pid, 'mnt');
  await sentinel.watchNamespaceOf(pid, 'net');
  const netns = await readlink(`/proc/${pid}/ns/net`);
  const path = `/proc/${pid}/ns/net`;
  // Entering a mount namespace leaves nsenter at its root: --wd keeps the caller's dir.
  const command = (
    cmd: string,
    args: readonly string[],
    cwd = process.cwd(),
  ): [string, string[]] => [
    'nsenter',
    [`--net=${path}`, `--mount=/proc/${pid}/ns/mnt`, `--wd=${cwd}`, '--', cmd, ...args],
  ];
  return {
    pid,
    path,
    command,
    exec: async (cmd, args, opts = {}) => {
      const [c, a] = command(cmd, args);
      return exec(c, a, { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 });
    },
    spawn: (cmd, args, opts = {}) => {
      const [c, a] = command(cmd, args, opts.cwd?.toString());
      return spawn(c, a, opts);
    },
    async stop() {
      if (holder.exitCode === null && holder.signalCode === null) {
        holder.kill('SIGKILL');
        await exited;
      }
      await killAllIn(netns);
      sentinel.disarm();
    },
  };
}
