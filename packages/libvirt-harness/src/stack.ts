/**
 * The real stack the libvirt providers' end-to-end suites run on: a private
 * libvirtd (QEMU under TCG, virtlogd) with a persistent dir pool, an sshd on
 * loopback reached through a TCP relay that can cut connections, an HTTP
 * server holding the test guest image, and the key files a provider reads.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildTestGuest, TEST_GUEST_MARK, type TestGuest } from './guest.js';
import { type ImageServer, startImageServer } from './images.js';
import { type Libvirtd, startLibvirtd } from './libvirtd.js';
import { startSentinel } from './process.js';
import { type Sshd, startSshd } from './sshd.js';

const exec = promisify(execFile);

/** The executables the real stack needs (for `describeWithPeers`). */
export const STACK_PEERS = [
  'libvirtd',
  'virtlogd',
  'virsh',
  'qemu-img',
  'qemu-system-x86_64',
  'sshd',
  'ssh-keygen',
] as const;

/** A TCP relay in front of sshd that can cut its connections. */
export interface Relay {
  readonly port: number;
  /** Connections relayed so far. */
  readonly accepted: number;
  /** Cuts any connection that has sent more than `bytes` towards sshd (undefined: never). */
  cutAfter(bytes: number | undefined): void;
  /** Connections cut so far. */
  readonly cut: number;
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to `port` on 127.0.0.1. */
export async function startRelay(port: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  let limit: number | undefined;
  let accepted = 0;
  let cut = 0;
  const srv = createServer((inbound) => {
    accepted++;
    const outbound = tcpConnect(port, '127.0.0.1');
    sockets.add(inbound).add(outbound);
    let sent = 0;
    inbound.on('data', (d: Buffer) => {
      sent += d.length;
      if (limit !== undefined && sent > limit) {
        cut++;
        inbound.destroy();
        outbound.destroy();
        return;
      }
      if (!outbound.write(d)) inbound.pause();
    });
    outbound.on('drain', () => inbound.resume());
    outbound.pipe(inbound);
    inbound.on('end', () => outbound.end());
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no relay address');
  return {
    port: addr.port,
    get accepted() {
      return accepted;
    },
    get cut() {
      return cut;
    },
    cutAfter: (bytes) => {
      limit = bytes;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      srv.close();
      await once(srv, 'close');
    },
  };
}

/** What a test looks at a daemon's QEMU driver with: virsh, the domains, a pool's volumes, console logs. */
export interface DaemonOracles {
  /** virsh on qemu:///system of the daemon. */
  virsh(args: readonly string[]): Promise<string>;
  /** Every domain name (`virsh list --all --name`). */
  domains(): Promise<string[]>;
  /** Every volume name in the pool (`virsh vol-list`). */
  volumes(): Promise<string[]>;
  /** The console log of a domain, as libvirt wrote it. */
  consoleLog(name: string): Promise<string>;
}

/** The stack {@link startLibvirtStack} starts. */
export interface LibvirtStack extends DaemonOracles {
  readonly daemon: Libvirtd;
  readonly sshd: Sshd;
  readonly relay: Relay;
  readonly images: ImageServer;
  readonly guest: TestGuest;
  readonly dir: string;
  readonly pool: string;
  readonly keyFile: string;
  readonly knownHostsFile: string;
  /** The guest image's path on the image server, and its SHA-256. */
  readonly imagePath: string;
  readonly imageSha: string;
  /** The provider config block for this stack (one host, `kvm1`), with `extra` merged in. */
  config(extra?: Record<string, unknown>): Record<string, unknown>;
  /** A fresh ed25519 key pair made by ssh-keygen: `{ privateKey, publicKey }`. */
  keygen(): Promise<{ privateKey: string; publicKey: string }>;
  stop(): Promise<void>;
}

function lines(s: string): string[] {
  return s
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .sort();
}

/**
 * Defines, builds, starts and autostarts a dir pool named `pool` at `path`
 * on the daemon's QEMU driver; resolves with the oracles over it.
 */
export async function startDirPool(
  daemon: Libvirtd,
  pool: string,
  path: string,
): Promise<DaemonOracles> {
  const virsh = (args: readonly string[]) => daemon.virsh('qemu:///system', args);
  await virsh(['pool-define-as', pool, 'dir', '--target', path]);
  await virsh(['pool-build', pool]);
  await virsh(['pool-start', pool]);
  await virsh(['pool-autostart', pool]);
  return {
    virsh,
    domains: async () => lines(await virsh(['list', '--all', '--name'])),
    volumes: async () =>
      lines(await virsh(['vol-list', pool])).map((l) => l.split(/\s+/)[0] as string),
    consoleLog: (name) =>
      readFile(join(daemon.dir, 'root', 'log', 'qemu', `${name}-console.log`), 'utf8').catch(
        () => '',
      ),
  };
}

/** Starts the whole stack; `stop()` ends every process it started. */
export async function startLibvirtStack(): Promise<LibvirtStack> {
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-stack-'));
  const sentinel = startSentinel(dir, { removeDir: true });
  await chmod(dir, 0o755);
  const guest = await buildTestGuest({ cacheDir: join(tmpdir(), 'proxy-op-test-guest') });
  const daemon = await startLibvirtd({ virtlogd: true });
  const sshd = await startSshd();
  const relay = await startRelay(sshd.port);
  const images = await startImageServer();
  const pool = 'proxy-pool';
  const oracles = await startDirPool(daemon, pool, join(dir, 'pool'));
  const keyFile = join(dir, 'ssh-privatekey');
  await writeFile(keyFile, sshd.clientKey, { mode: 0o600 });
  const knownHostsFile = join(dir, 'known_hosts');
  const [type, key] = sshd.hostPublicKey.split(/\s+/);
  await writeFile(knownHostsFile, `[127.0.0.1]:${relay.port} ${type} ${key}\n`);
  const imagePath = '/test-guest.qcow2';
  const imageSha = await images.serve(imagePath, guest.path);
  let keys = 0;
  return {
    daemon,
    sshd,
    relay,
    images,
    guest,
    dir,
    pool,
    keyFile,
    knownHostsFile,
    imagePath,
    imageSha,
    config: (extra = {}) => ({
      hosts: [
        {
          name: 'kvm1',
          address: '127.0.0.1',
          port: relay.port,
          user: sshd.username,
          socket: daemon.socket,
          pool,
          domainType: 'qemu',
        },
      ],
      sshKeyFile: keyFile,
      knownHostsFile,
      diskSizeGb: 1,
      images: { guest: { url: images.url(imagePath), sha256: imageSha } },
      machineTypes: { small: { vcpus: 1, memoryMiB: 192 } },
      ...extra,
    }),
    ...oracles,
    async keygen() {
      const file = join(dir, `key-${++keys}`);
      await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file]);
      return {
        privateKey: await readFile(file, 'utf8'),
        publicKey: (await readFile(`${file}.pub`, 'utf8')).trim(),
      };
    },
    async stop() {
      await images.close();
      await relay.close();
      await sshd.stop();
      await daemon.stop();
      await rm(dir, { recursive: true, force: true });
      sentinel.disarm();
    },
  };
}

/** The guest's base64 dump of a seed file between its begin and end console lines. */
export function dumpedSeedFile(consoleText: string, file: string): Buffer | undefined {
  const ls = consoleText.split(/\r?\n/);
  const begin = ls.indexOf(`${TEST_GUEST_MARK} begin ${file}`);
  const end = ls.indexOf(`${TEST_GUEST_MARK} end ${file}`);
  if (begin < 0 || end < begin) return undefined;
  return Buffer.from(ls.slice(begin + 1, end).join(''), 'base64');
}

/** The IPv4 addresses (`addr/prefix`) `virsh domifaddr --source agent` reports. */
export async function agentAddresses(
  stack: Pick<DaemonOracles, 'virsh'>,
  name: string,
): Promise<string[]> {
  const out = await stack.virsh(['domifaddr', name, '--source', 'agent']);
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols[2] === 'ipv4' && cols[3] !== undefined)
    .map((cols) => cols[3] as string)
    .sort();
}

/** One guest agent command through `virsh qemu-agent-command`: its `return`. */
async function agentCommand(
  stack: Pick<DaemonOracles, 'virsh'>,
  name: string,
  execute: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  const out = await stack.virsh([
    'qemu-agent-command',
    name,
    JSON.stringify({ execute, arguments: args }),
  ]);
  return (JSON.parse(out) as { return: unknown }).return;
}

/** A file of the guest, read through its agent with virsh; undefined when it cannot be read. */
export async function guestFile(
  stack: Pick<DaemonOracles, 'virsh'>,
  name: string,
  path: string,
): Promise<Buffer | undefined> {
  const agent = (execute: string, args: Record<string, unknown>) =>
    agentCommand(stack, name, execute, args);
  try {
    const handle = (await agent('guest-file-open', { path, mode: 'r' })) as number;
    const chunks: Buffer[] = [];
    try {
      for (;;) {
        const r = (await agent('guest-file-read', { handle, count: 1 << 20 })) as {
          'buf-b64': string;
          eof: boolean;
        };
        chunks.push(Buffer.from(r['buf-b64'], 'base64'));
        if (r.eof) break;
      }
    } finally {
      await agent('guest-file-close', { handle }).catch(() => {});
    }
    return Buffer.concat(chunks);
  } catch {
    return undefined;
  }
}

/** What a program run in the guest by {@link guestExec} ended with. */
export interface GuestExecResult {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `path` with `args` in the guest through its agent with virsh
 * (`guest-exec`, then `guest-exec-status` until it exits, within `ms`).
 */
export async function guestExec(
  stack: Pick<DaemonOracles, 'virsh'>,
  name: string,
  path: string,
  args: readonly string[],
  ms = 60_000,
): Promise<GuestExecResult> {
  const { pid } = (await agentCommand(stack, name, 'guest-exec', {
    path,
    arg: args,
    'capture-output': true,
  })) as { pid: number };
  const end = Date.now() + ms;
  for (;;) {
    const st = (await agentCommand(stack, name, 'guest-exec-status', { pid })) as {
      exited: boolean;
      exitcode?: number;
      'out-data'?: string;
      'err-data'?: string;
    };
    if (st.exited) {
      const text = (b64?: string) => Buffer.from(b64 ?? '', 'base64').toString('utf8');
      return {
        exitCode: st.exitcode,
        stdout: text(st['out-data']),
        stderr: text(st['err-data']),
      };
    }
    if (Date.now() > end) throw new Error(`${path} in guest ${name} still running after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
