/**
 * A private `libvirtd` (and `virtlogd`) for the libvirt suites: started as
 * root in a temp dir, in its own mount namespace over private copies of
 * libvirt's state dirs (and, when asked, in a network namespace), restarted
 * as an admin would, and stopped by `stop()` so no process outlives the
 * suite.
 *
 * @module
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NetworkNamespace } from './netns.js';
import { alive, BINARIES, readOr, startSentinel, stopChild, waitFor } from './process.js';

const exec = promisify(execFile);

/** The executables the libvirtd suites need, for `describeWithPeers`. */
export const LIBVIRTD_PEERS = ['libvirtd', 'virsh', 'qemu-img'] as const;

/**
 * Creates the `libvirt-qemu` group and user the QEMU driver insists on,
 * when they are missing (needs root). Resolves whether they exist after.
 */
export async function ensureQemuUser(): Promise<boolean> {
  const has = async (db: string, name: string) =>
    exec('getent', [db, name]).then(
      () => true,
      () => false,
    );
  if (!(await has('group', 'libvirt-qemu'))) {
    await exec('groupadd', ['-r', 'libvirt-qemu']).catch(() => {});
  }
  if (!(await has('passwd', 'libvirt-qemu'))) {
    await exec('useradd', [
      '-r',
      '-g',
      'libvirt-qemu',
      '-M',
      '-d',
      '/var/lib/libvirt',
      '-s',
      '/usr/sbin/nologin',
      'libvirt-qemu',
    ]).catch(() => {});
  }
  return (await has('group', 'libvirt-qemu')) && (await has('passwd', 'libvirt-qemu'));
}

/**
 * Shell lines that replace /dev in the current mount namespace with a tmpfs
 * holding the host's devices except /dev/kvm (the host's /dev stays
 * reachable at `hostdev`).
 */
function privateDev(hostdev: string): string[] {
  const nodes = ['null', 'zero', 'full', 'random', 'urandom', 'tty', 'net/tun'];
  return [
    `mount --rbind /dev "${hostdev}"`,
    'mount -t tmpfs -o mode=755,nosuid tmpfs /dev',
    'mkdir -p /dev/pts /dev/shm /dev/net /dev/mqueue',
    ...nodes.map(
      (n) =>
        `if [ -e "${hostdev}/${n}" ]; then touch /dev/${n}; mount --bind "${hostdev}/${n}" /dev/${n}; fi`,
    ),
    // A devpts of its own, as containers have: QEMU's pty consoles need a ptmx it may open.
    'mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts',
    'ln -s pts/ptmx /dev/ptmx',
    `mount --rbind "${hostdev}/shm" /dev/shm`,
    `if [ -d "${hostdev}/mqueue" ]; then mount --rbind "${hostdev}/mqueue" /dev/mqueue; fi`,
    'ln -s /proc/self/fd /dev/fd',
    'ln -s /proc/self/fd/0 /dev/stdin',
    'ln -s /proc/self/fd/1 /dev/stdout',
    'ln -s /proc/self/fd/2 /dev/stderr',
  ];
}

/** A running libvirtd. */
export interface Libvirtd {
  /** The temp dir holding its config, sockets, pid file and log. */
  readonly dir: string;
  /** The read-write socket. */
  readonly socket: string;
  /** The daemon's pid (a new one after {@link Libvirtd.restart}). */
  readonly pid: number;
  /** The log file (errors and warnings). */
  readonly logFile: string;
  /** A virsh `-c` URI for `driver` (`test:///default`, `qemu:///system`) through this daemon's socket. */
  uri(driver: string): string;
  /** Runs virsh against `driver` through this daemon; resolves with stdout. */
  virsh(driver: string, args: readonly string[]): Promise<string>;
  /** Sends a signal (e.g. `SIGKILL` for fault tests, `SIGSTOP`/`SIGCONT`). */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited (the current one, after a restart). */
  readonly exited: Promise<void>;
  /**
   * Stops the daemon (SIGTERM) and starts it again on the same dir, socket
   * and config, as an admin's `systemctl restart libvirtd` would: clients
   * lose their connections, running guests keep running and the new
   * daemon reconnects to them, persistent definitions stay. Resolves once
   * the new daemon accepts connections.
   */
  restart(): Promise<void>;
  /**
   * Destroys running QEMU guests, stops the daemon (and the virtlogd it
   * started) and removes the temp dir unless `keepDir`.
   */
  stop(): Promise<void>;
}

/** Options of {@link startLibvirtd}. */
export interface LibvirtdOptions {
  /** A dir to work in; a new temp dir by default. */
  dir?: string;
  /** Keep the dir after `stop()` (for debugging). */
  keepDir?: boolean;
  /** Also start a virtlogd in the daemon's namespace (needed to start guests). */
  virtlogd?: boolean;
  /** Readiness timeout; 20 s by default. */
  timeoutMs?: number;
  /**
   * Hide /dev/kvm from the daemon (true by default). Where /dev/kvm exists
   * but KVM does not work (containers, nested sandboxes) libvirt 9 judges
   * its cached QEMU capabilities outdated on every lookup and re-probes
   * QEMU each time (tens of seconds per define); without the device it
   * keeps one TCG probe. Pass false on hosts with working KVM.
   */
  hideKvm?: boolean;
  /** Extra `libvirtd.conf` lines (e.g. `log_filters = "1:qemu"` with `log_outputs`), appended last. */
  config?: readonly string[];
  /**
   * Run the daemon (and its guests, virtlogd and dnsmasq) in this network
   * namespace: their bridges, taps and addresses live there. This machine's
   * network by default.
   */
  netns?: Pick<NetworkNamespace, 'command'>;
}

/**
 * Starts libvirtd as root with a private socket dir and config in a temp
 * dir (`auth_unix_rw = "none"`, no TCP or TLS listeners), after creating
 * the `libvirt-qemu` user and group when missing. The daemon runs in its
 * own mount namespace (`unshare`), over private copies of libvirt's state
 * dirs, so several daemons can run at once. Resolves once the socket
 * accepts connections.
 */
export async function startLibvirtd(opts: LibvirtdOptions = {}): Promise<Libvirtd> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'proxy-op-libvirtd-')));
  await mkdir(dir, { recursive: true });
  // Should this process die without stop(), the daemon, virtlogd and the
  // guests (which outlive libvirtd) are killed and the dir removed.
  const sentinel = startSentinel(dir, {
    removeDir: !opts.keepDir,
    pidDirs: [join(dir, 'root', 'run', 'qemu')],
  });
  await ensureQemuUser();
  const logFile = join(dir, 'libvirtd.log');
  const conf = join(dir, 'libvirtd.conf');
  await writeFile(
    conf,
    [
      `unix_sock_dir = "${dir}"`,
      'unix_sock_rw_perms = "0770"',
      'auth_unix_rw = "none"',
      'auth_unix_ro = "none"',
      'listen_tcp = 0',
      'listen_tls = 0',
      `log_outputs = "3:file:${logFile}"`,
      ...(opts.config ?? []),
      '',
    ].join('\n'),
  );
  // Each daemon runs in its own mount namespace with private /run/libvirt,
  // /var/lib/libvirt, /var/log/libvirt and /etc/libvirt, so daemons of
  // several suites can run at once and none leaves definitions behind.
  const priv = join(dir, 'root');
  for (const sub of ['run', 'lib', 'log', 'etc', 'hostdev']) {
    await mkdir(join(priv, sub), { recursive: true });
  }
  if (existsSync('/etc/libvirt')) await exec('cp', ['-a', '/etc/libvirt/.', join(priv, 'etc')]);
  const virtlogdPid = join(dir, 'virtlogd.pid');
  const script = (withLogd: boolean) =>
    [
      'set -e',
      'mkdir -p /run/libvirt /var/lib/libvirt /var/log/libvirt /etc/libvirt',
      // As the Debian package leaves it: the QEMU driver's log dir, where console logs go too.
      `mkdir -p "${join(priv, 'log', 'qemu')}"`,
      `mount --bind "${join(priv, 'run')}" /run/libvirt`,
      `mount --bind "${join(priv, 'lib')}" /var/lib/libvirt`,
      `mount --bind "${join(priv, 'log')}" /var/log/libvirt`,
      `mount --bind "${join(priv, 'etc')}" /etc/libvirt`,
      ...(opts.hideKvm !== false && existsSync('/dev/kvm')
        ? privateDev(join(priv, 'hostdev'))
        : []),
      withLogd ? `${BINARIES.virtlogd} --pid-file "${virtlogdPid}" &` : ':',
      // At a lower CPU priority, and its QEMU guests with it (they inherit it): a guest under TCG
      // takes a whole core for minutes, and on a small machine the suites running beside it
      // (browsers, operators, proxies) must still get the CPU they wait on.
      `exec nice -n 10 ${BINARIES.libvirtd} --config "${conf}" --pid-file "${join(dir, 'libvirtd.pid')}"`,
    ].join('\n');
  const socket = join(dir, 'libvirt-sock');
  const uri = (driver: string) => {
    const [scheme, rest] = driver.split('://');
    return `${scheme}+unix://${rest}?socket=${socket}`;
  };
  const virsh = async (driver: string, args: readonly string[]) => {
    try {
      return (await exec(BINARIES.virsh, ['-q', '-c', uri(driver), ...args], { timeout: 60_000 }))
        .stdout;
    } catch (err) {
      // What virsh said, whether it ran out of time, and what the daemon logged last.
      const e = err as Error & { killed?: boolean; stderr?: string };
      const log = (await readOr(logFile)).trim().split('\n').slice(-20).join('\n');
      throw new Error(
        `virsh ${args.join(' ')} failed${e.killed === true ? ' (killed after 60 s)' : ''}: ${(e.stderr ?? '').trim() || e.message}\nlibvirtd's last log lines:\n${log || '(none)'}`,
        { cause: err },
      );
    }
  };
  const logdPid = async (): Promise<number> => Number((await readOr(virtlogdPid)).trim());
  const stopLogd = async () => {
    const pid = await logdPid();
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  };
  const logdAlive = async (): Promise<boolean> => alive(await logdPid());
  let child!: ChildProcess;
  let exited!: Promise<void>;
  let stderr = '';
  // Starts the daemon (and virtlogd, unless one from before a restart still runs).
  const launch = async (withLogd: boolean) => {
    stderr = '';
    const argv = ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script(withLogd)];
    const [cmd, args] = opts.netns?.command('unshare', argv) ?? ['unshare', argv];
    child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const c = child;
    exited = once(c, 'exit').then(() => {});
    await waitFor(
      'libvirtd',
      async () =>
        existsSync(socket) &&
        (await exec(BINARIES.virsh, ['-c', uri('test:///default'), 'version']).then(
          () => true,
          () => false,
        )),
      c,
      opts.timeoutMs ?? 20_000,
      async () => `${stderr}\n${await readOr(logFile)}`,
    );
    if (c.pid !== undefined) await sentinel.watchNamespaceOf(c.pid);
  };
  try {
    await launch(opts.virtlogd === true);
  } catch (err) {
    await stopChild(child);
    await stopLogd();
    if (!opts.keepDir && opts.dir === undefined) await rm(dir, { recursive: true, force: true });
    sentinel.disarm();
    throw err;
  }
  return {
    dir,
    socket,
    get pid() {
      return child.pid ?? -1;
    },
    logFile,
    uri,
    virsh,
    kill: (signal) => {
      child.kill(signal);
    },
    get exited() {
      return exited;
    },
    async restart() {
      await stopChild(child);
      // The old socket file stays behind until the new daemon replaces it.
      await rm(socket, { force: true });
      await launch(opts.virtlogd === true && !(await logdAlive()));
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // Guests outlive libvirtd: destroy any still running first.
        const names = await virsh('qemu:///system', ['list', '--name']).catch(() => '');
        for (const n of names
          .split('\n')
          .map((x) => x.trim())
          .filter(Boolean)) {
          await virsh('qemu:///system', ['destroy', n]).catch(() => {});
        }
      }
      await stopChild(child);
      await stopLogd();
      if (!opts.keepDir) await rm(dir, { recursive: true, force: true });
      sentinel.disarm();
    },
  };
}
