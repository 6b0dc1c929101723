/**
 * The stack the VM providers' end-to-end tests run on: a network namespace
 * holding a libvirtd (QEMU under TCG, virtlogd) with an isolated libvirt
 * network on a bridge (DHCP from dnsmasq) and a dir pool, an sshd on its
 * loopback, an HTTP server holding the Debian cloud guest image, and an
 * origin on the bridge. Guests get an address the namespace reaches;
 * nothing in it is routed to this machine's network. A client in the
 * namespace (curl) reaches a guest's proxy from the bridge's address or
 * from a second address, outside a proxy's allowed sources.
 *
 * @module
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCloudGuest, CLOUD_GUEST_PEERS, type CloudGuest } from './cloud-guest.js';
import { sha256Of } from './images.js';
import { type Libvirtd, startLibvirtd } from './libvirtd.js';
import { type NetworkNamespace, startNetworkNamespace } from './netns.js';
import { type NamespacedHttpServer, startNamespacedHttpServer } from './ns-http.js';
import { startSentinel } from './process.js';
import { type Sshd, startSshd } from './sshd.js';
import {
  agentAddresses,
  type DaemonOracles,
  guestFile,
  STACK_PEERS,
  startDirPool,
} from './stack.js';

/** The executables the cloud stack needs, for `describeWithPeers`. */
export const CLOUD_STACK_PEERS = [
  ...STACK_PEERS,
  ...CLOUD_GUEST_PEERS,
  'nsenter',
  'ip',
  'dnsmasq',
  'curl',
] as const;

/** The addresses of the stack's network. */
export const CLOUD_NETWORK = Object.freeze({
  /** The libvirt network and its bridge. */
  name: 'proxy-op-e2e',
  bridge: 'pxbr0',
  /** The bridge's address: libvirt's, dnsmasq's, the origin's and the allowed client's. */
  gateway: '192.168.150.1',
  prefix: 24,
  dhcpStart: '192.168.150.100',
  dhcpEnd: '192.168.150.199',
  /** A second address of the namespace on the bridge, for a client outside a proxy's allowed sources. */
  outsider: '192.168.150.250',
});

/** What a proxy answered a client. */
export interface ProxyAnswer {
  /** The HTTP status (of the CONNECT, for a tunnel); 0 when the proxy could not be reached. */
  readonly status: number;
  /** The response headers, lowercased names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** curl's complaint when it failed. */
  readonly error?: string;
}

/** The stack {@link startCloudStack} starts. */
export interface CloudStack extends DaemonOracles {
  readonly guest: CloudGuest;
  readonly netns: NetworkNamespace;
  readonly daemon: Libvirtd;
  readonly sshd: Sshd;
  /** Serves the guest image at {@link CloudStack.imageUrl}. */
  readonly images: NamespacedHttpServer;
  /** The origin a client reaches through a proxy, on the bridge's address. */
  readonly origin: NamespacedHttpServer;
  readonly dir: string;
  readonly pool: string;
  readonly keyFile: string;
  readonly knownHostsFile: string;
  readonly imageUrl: string;
  readonly imageSha: string;
  /** A provider config block for this stack (host `kvm1` on the bridge, image `debian`, type `small`), with `extra` merged in. */
  config(extra?: Record<string, unknown>): Record<string, unknown>;
  /** A file of a running guest, read through its guest agent; undefined when it cannot be read. */
  guestFile(name: string, path: string): Promise<Buffer | undefined>;
  /** A plain-HTTP request through `proxy` (`http://ip:port`) from `from` (the bridge's address by default). */
  request(proxy: string, url: string, from?: string): Promise<ProxyAnswer>;
  /** A CONNECT to `target` (`host:port`) through `proxy`; the answer's status is the CONNECT's. */
  connect(proxy: string, target: string, from?: string): Promise<ProxyAnswer>;
  stop(): Promise<void>;
}

function networkXml(): string {
  const n = CLOUD_NETWORK;
  return [
    '<network>',
    `  <name>${n.name}</name>`,
    `  <bridge name="${n.bridge}" stp="off" delay="0"/>`,
    '  <dns enable="no"/>',
    `  <ip address="${n.gateway}" prefix="${n.prefix}">`,
    `    <dhcp><range start="${n.dhcpStart}" end="${n.dhcpEnd}"/></dhcp>`,
    '  </ip>',
    '</network>',
  ].join('\n');
}

/** Splits curl's `--include` output into the last header block and the body. */
function parseCurl(out: string): { status: number; headers: Record<string, string>; body: string } {
  let rest = out;
  let head = '';
  // A CONNECT's answer, or a 100 Continue, comes before the final one.
  while (/^HTTP\/\d/.test(rest)) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) {
      head = rest;
      rest = '';
      break;
    }
    head = rest.slice(0, end);
    rest = rest.slice(end + 4);
  }
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(/^HTTP\/\S+ (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: rest };
}

/**
 * Starts the whole stack (building or reusing the cloud guest image first);
 * `stop()` ends every process it started. Needs root and the Debian
 * packages in `.ci/apt-packages` (libvirt, QEMU, dnsmasq-base, sshd, curl,
 * debootstrap and the image's tools).
 */
export async function startCloudStack(opts: { cacheDir?: string } = {}): Promise<CloudStack> {
  const guest = await buildCloudGuest(
    opts.cacheDir === undefined ? {} : { cacheDir: opts.cacheDir },
  );
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-cloud-stack-'));
  const sentinel = startSentinel(dir, { removeDir: true });
  await chmod(dir, 0o755);
  const started: Array<{ stop(): Promise<void> }> = [];
  const stopAll = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    sentinel.disarm();
  };
  try {
    const netns = await startNetworkNamespace();
    started.push(netns);
    const daemon = await startLibvirtd({ virtlogd: true, netns });
    started.push(daemon);
    const netXml = join(dir, 'network.xml');
    await writeFile(netXml, networkXml());
    await daemon.virsh('qemu:///system', ['net-define', netXml]);
    await daemon.virsh('qemu:///system', ['net-start', CLOUD_NETWORK.name]);
    // libvirtd leaves a network's dnsmasq running when it stops: the network goes first.
    started.push({
      stop: async () => {
        await daemon.virsh('qemu:///system', ['net-destroy', CLOUD_NETWORK.name]);
      },
    });
    await netns.exec('ip', [
      'addr',
      'add',
      `${CLOUD_NETWORK.outsider}/32`,
      'dev',
      CLOUD_NETWORK.bridge,
    ]);
    const pool = 'proxy-pool';
    const oracles = await startDirPool(daemon, pool, join(dir, 'pool'));
    const { virsh } = oracles;
    const sshd = await startSshd({ netns });
    started.push(sshd);
    const imagePath = '/cloud-guest.qcow2';
    const images = await startNamespacedHttpServer(netns, {
      host: '127.0.0.1',
      files: { [imagePath]: guest.path },
    });
    started.push(images);
    const origin = await startNamespacedHttpServer(netns, { host: CLOUD_NETWORK.gateway });
    started.push(origin);
    const imageSha = await sha256Of(guest.path);
    const keyFile = join(dir, 'ssh-privatekey');
    await writeFile(keyFile, sshd.clientKey, { mode: 0o600 });
    const curl = async (args: readonly string[]): Promise<ProxyAnswer> => {
      try {
        const { stdout } = await netns.exec('curl', [
          '-sS',
          '-g',
          '-i',
          '--max-time',
          '30',
          ...args,
        ]);
        return parseCurl(stdout);
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string };
        return { ...parseCurl(e.stdout ?? ''), error: (e.stderr ?? String(err)).trim() };
      }
    };
    const stack: CloudStack = {
      guest,
      netns,
      daemon,
      sshd,
      images,
      origin,
      dir,
      pool,
      keyFile,
      knownHostsFile: sshd.knownHostsFile,
      imageUrl: images.url(imagePath),
      imageSha,
      config: (extra = {}) => ({
        hosts: [
          {
            name: 'kvm1',
            address: '127.0.0.1',
            port: sshd.port,
            user: sshd.username,
            socket: daemon.socket,
            pool,
            bridge: CLOUD_NETWORK.bridge,
            domainType: 'qemu',
          },
        ],
        sshKeyFile: keyFile,
        knownHostsFile: sshd.knownHostsFile,
        diskSizeGb: 1,
        images: { debian: { url: images.url(imagePath), sha256: imageSha } },
        machineTypes: { small: { vcpus: 1, memoryMiB: 512 } },
        ...extra,
      }),
      ...oracles,
      guestFile: (name, path) => guestFile({ virsh }, name, path),
      request: (proxy, url, from = CLOUD_NETWORK.gateway) =>
        curl(['--noproxy', '', '-x', proxy, '--interface', from, url]),
      connect: async (proxy, target, from = CLOUD_NETWORK.gateway) => {
        // The CONNECT's own status, whatever becomes of the tunnel after it.
        const args = ['-sS', '--max-time', '30', '-o', '/dev/null', '-w', '%{http_connect}'];
        const tunnel = ['--noproxy', '', '-x', proxy, '-p', '--interface', from];
        const run = await netns
          .exec('curl', [...args, ...tunnel, `http://${target}/`])
          .then((r) => ({ stdout: r.stdout, error: undefined }))
          .catch((e: { stdout?: string; stderr?: string }) => ({
            stdout: e.stdout ?? '',
            error: (e.stderr ?? '').trim(),
          }));
        const status = Number(run.stdout.trim()) || 0;
        return { status, headers: {}, body: '', ...(run.error ? { error: run.error } : {}) };
      },
      stop: stopAll,
    };
    return stack;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * The IPv4 addresses (no prefix, loopback left out) that `name`'s guest
 * agent reports; none while the agent does not answer.
 */
export async function guestAddresses(
  stack: Pick<CloudStack, 'virsh'>,
  name: string,
): Promise<string[]> {
  const found = await agentAddresses(stack, name).catch(() => [] as string[]);
  return found.map((a) => a.split('/')[0] as string).filter((a) => !a.startsWith('127.'));
}
