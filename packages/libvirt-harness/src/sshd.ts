/**
 * An sshd on loopback for the SSH suites.
 *
 * @module
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NetworkNamespace } from './netns.js';
import { BINARIES, startSentinel, stopChild, waitFor } from './process.js';

const exec = promisify(execFile);

/** The executables the SSH suites need, for `describeWithPeers`. */
export const SSHD_PEERS = ['sshd', 'ssh-keygen'] as const;

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  srv.close();
  await once(srv, 'close');
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

/** A running sshd on loopback. */
export interface Sshd {
  /** Always `127.0.0.1`. */
  readonly host: string;
  /** The port it listens on. */
  readonly port: number;
  /** The user to log in as (the current user; root here). */
  readonly username: string;
  /** The client's private key (OpenSSH format, no passphrase). */
  readonly clientKey: string;
  /** The server's public host key line (`ssh-ed25519 AAAA...`). */
  readonly hostPublicKey: string;
  /** A known_hosts file naming this server (`[127.0.0.1]:port key`). */
  readonly knownHostsFile: string;
  /** The temp dir holding keys, config and log. */
  readonly dir: string;
  /** The listening sshd's process ID (it runs in the foreground, `-D`). */
  readonly pid: number;
  /** What sshd logged so far (it logs to stderr, kept in memory). */
  log(): string;
  /** Stops sshd and removes the temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts `sshd -D` on 127.0.0.1 with generated host and client keys in a
 * temp dir: key auth only, stream-local forwarding allowed, so a client can
 * open `direct-streamlocal` channels to a libvirt socket.
 */
export async function startSshd(
  opts: {
    dir?: string;
    port?: number;
    timeoutMs?: number;
    /** Listen on 127.0.0.1 of this network namespace instead of this machine's. */
    netns?: Pick<NetworkNamespace, 'command'>;
  } = {},
): Promise<Sshd> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'proxy-op-sshd-')));
  await mkdir(dir, { recursive: true });
  // Should this process die without stop(), sshd is killed and the dir removed.
  const sentinel = startSentinel(dir, { removeDir: true });
  await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  const hostKey = join(dir, 'host_ed25519');
  const clientKeyFile = join(dir, 'client_ed25519');
  await exec(BINARIES.sshKeygen, ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  await exec(BINARIES.sshKeygen, ['-q', '-t', 'ed25519', '-N', '', '-f', clientKeyFile]);
  const authorized = join(dir, 'authorized_keys');
  await writeFile(authorized, await readFile(`${clientKeyFile}.pub`, 'utf8'), { mode: 0o600 });
  const port = opts.port ?? (await freePort());
  const username = (await exec('id', ['-un'])).stdout.trim();
  const config = join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'AllowStreamLocalForwarding yes',
      'X11Forwarding no',
      'MaxStartups 50',
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  );
  const argv = ['-D', '-e', '-f', config];
  const [cmd, args] = opts.netns?.command(BINARIES.sshd, argv) ?? [BINARIES.sshd, argv];
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    log += d;
  });
  const hostPublicKey = (await readFile(`${hostKey}.pub`, 'utf8')).trim();
  const knownHostsFile = join(dir, 'known_hosts');
  const [type, key] = hostPublicKey.split(/\s+/);
  await writeFile(knownHostsFile, `[127.0.0.1]:${port} ${type} ${key}\n`);
  try {
    await waitFor(
      'sshd',
      () => log.includes('Server listening'),
      child,
      opts.timeoutMs ?? 10_000,
      async () => log,
    );
  } catch (err) {
    await stopChild(child);
    if (opts.dir === undefined) await rm(dir, { recursive: true, force: true });
    sentinel.disarm();
    throw err;
  }
  return {
    host: '127.0.0.1',
    port,
    username,
    clientKey: await readFile(clientKeyFile, 'utf8'),
    hostPublicKey,
    knownHostsFile,
    dir,
    pid: child.pid ?? 0,
    log: () => log,
    async stop() {
      await stopChild(child);
      await rm(dir, { recursive: true, force: true });
      sentinel.disarm();
    },
  };
}
