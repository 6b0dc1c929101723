// kvm2 side by side with the raw steps and with libvirt's own client, on the
// real stack of the end-to-end suite (libvirtd with QEMU under TCG, sshd on
// loopback, the test guest image):
//
// 1. Create to Running: through the provider (Create, then Get until Running)
//    and as raw steps through libvirt-rpc over the same SSH (overlay, seed,
//    define, start, then the guest agent until it reports an address). The
//    provider's overhead is the difference of the medians.
// 2. Image upload through SSH: the engine's SSH transport streaming a file
//    into a volume, and `virsh -c qemu+ssh://… vol-upload` of the same file.
//
// Run with `npm run bench` (after a build, as root, with the Debian packages
// of .ci/apt-packages). BENCH_ROUNDS sets the rounds (default 3, alternating),
// BENCH_UPLOAD_MIB the upload size (default 256). BENCH_SMOKE=1 is the smoke
// run CI makes (one round, until started only: no guest boots to its agent,
// which under TCG would take CPU from the suites beside it; a 4 MiB upload),
// only to show the benchmark runs and measures; without the stack's peers it says it skipped (under CI=true,
// where .ci/apt-packages installs them, that fails the run).
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createProvider, type Provider } from '@proxy-op/contract';
import { STACK_PEERS, startLibvirtStack } from '@proxy-op/libvirt-harness';
import { sshTransport } from '@proxy-op/libvirt-provider';
import {
  connect,
  DomainUndefineFlags,
  InterfaceAddressSource,
  type LibvirtClient,
} from '@proxy-op/libvirt-rpc';
import { sshDialer } from '@proxy-op/libvirt-rpc/ssh';
import { buildSeedISO } from '@proxy-op/nocloud';
import { providerModule } from '@proxy-op/provider-kvm2';
import { missingPeers } from '@proxy-op/testkit';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMOKE ? 1 : 3));
const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? (SMOKE ? 4 : 256));
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);
const POLL_MS = 250;
const cloudInit = new TextEncoder().encode('#cloud-config\n');

const exec = promisify(execFile);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const missing = missingPeers([...STACK_PEERS, 'nc']);
if (missing !== undefined) {
  if (process.env.CI === 'true') throw new Error(`${missing} (.ci/apt-packages installs them)`);
  console.log(`skipped: the benchmark runs on libvirtd, sshd and QEMU, and ${missing}`);
  process.exit(0);
}
part('the libvirt stack (libvirtd, sshd, the test guest)');
const stack = await startLibvirtStack();
let provider: Provider | undefined;
let raw: LibvirtClient | undefined;
try {
  provider = await createProvider(providerModule, 'kvm2-bench', stack.config(), {});
  const host = (stack.config().hosts as Record<string, unknown>[])[0] as {
    port: number;
    socket: string;
  };
  const dial = async () =>
    connect({
      dialer: sshDialer({
        host: '127.0.0.1',
        port: host.port,
        username: stack.sshd.username,
        privateKey: stack.sshd.clientKey,
        hostKey: { knownHostsFile: stack.knownHostsFile },
        socketPath: stack.daemon.socket,
      }),
      uri: 'qemu:///system',
    });
  raw = await dial();
  const c = raw;
  const pool = await c.storagePoolLookupByName(stack.pool);

  // Warm the image cache, so both sides boot from the same cached image.
  part('warm the image cache');
  await provider.delete(await provider.create(request('bench-warm')));
  const image = (await stack.volumes()).find(
    (v) => v.startsWith('proxy-op-image-') && !v.includes('.sha256-'),
  );
  const imagePath = await c.storageVolGetPath(
    await c.storageVolLookupByName(pool, image as string),
  );

  const viaProvider = async (name: string) => {
    const p = provider as Provider;
    const t0 = performance.now();
    const id = await p.create(request(name));
    const created = performance.now() - t0;
    for (;;) {
      if (SMOKE || (await p.get(id)).state === 'Running') break;
      await sleep(POLL_MS);
    }
    const running = performance.now() - t0;
    await p.delete(id);
    return { created, running };
  };

  const viaRaw = async (name: string) => {
    const t0 = performance.now();
    const overlay = await c.storageVolCreateXml(
      pool,
      `<volume><name>${name}.qcow2</name><capacity unit="bytes">${1024 ** 3}</capacity><target><format type="qcow2"/></target><backingStore><path>${imagePath}</path><format type="qcow2"/></backingStore></volume>`,
    );
    const iso = buildSeedISO({ instanceId: name, userData: cloudInit });
    const seed = await c.storageVolCreateXml(
      pool,
      `<volume><name>${name}-seed.iso</name><capacity unit="bytes">${iso.byteLength}</capacity><target><format type="raw"/></target></volume>`,
    );
    await c.storageVolUpload(seed, [iso]);
    const dom = await c.domainDefineXml(
      domainXml(name, await c.storageVolGetPath(overlay), await c.storageVolGetPath(seed)),
    );
    await c.domainCreate(dom);
    const created = performance.now() - t0;
    for (;;) {
      if (SMOKE) break;
      const ifaces = await c
        .domainInterfaceAddresses(dom, InterfaceAddressSource.AGENT)
        .catch(() => []);
      if (ifaces.some((i) => i.name !== 'lo' && i.addrs.some((a) => a.type === 0))) break;
      await sleep(POLL_MS);
    }
    const running = performance.now() - t0;
    await c.domainDestroy(dom);
    await c.domainUndefineFlags(dom, DomainUndefineFlags.NVRAM | DomainUndefineFlags.MANAGED_SAVE);
    await c.storageVolDelete(overlay);
    await c.storageVolDelete(seed);
    return { created, running };
  };

  const prov: { created: number; running: number }[] = [];
  const rawT: { created: number; running: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    part(`round ${round + 1}: Create to Running through the provider`);
    prov.push(await viaProvider(`bench-p${round}`));
    part(`round ${round + 1}: Create to Running as raw steps`);
    rawT.push(await viaRaw(`bench-r${round}`));
  }
  const pc = median(prov.map((x) => x.created));
  const pr = median(prov.map((x) => x.running));
  const rc = median(rawT.map((x) => x.created));
  const rr = median(rawT.map((x) => x.running));
  console.log(
    `Create to ${SMOKE ? 'started' : 'Running'}, the test guest under TCG, median of ${ROUNDS} alternating rounds`,
  );
  console.log('');
  console.log('| measure | kvm2 provider | raw libvirt-rpc | overhead | ratio |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(
    `| until started | ${secs(pc)} | ${secs(rc)} | ${secs(pc - rc)} | ${(pc / rc).toFixed(2)}x |`,
  );
  if (!SMOKE)
    console.log(
      `| until Running (agent) | ${secs(pr)} | ${secs(rr)} | ${secs(pr - rr)} | ${(pr / rr).toFixed(2)}x |`,
    );
  if (!SMOKE)
    console.log(
      `\nrounds until Running, s: provider ${prov.map((x) => (x.running / 1000).toFixed(1)).join(' ')}; ` +
        `raw ${rawT.map((x) => (x.running / 1000).toFixed(1)).join(' ')}`,
    );

  // 2. Upload through SSH: the engine's transport and virsh over qemu+ssh, the same file.
  part(`image upload through SSH, ${UPLOAD_MIB} MiB`);
  const src = join(stack.dir, 'upload.bin');
  const f = await open(src, 'w');
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < UPLOAD_MIB; i++) {
    block.fill(i & 0xff);
    block.writeUInt32BE(i, 0);
    await f.write(block);
  }
  await f.close();
  const size = (await stat(src)).size;
  const volXml = (name: string) =>
    `<volume><name>${name}</name><capacity unit="bytes">${size}</capacity><target><format type="raw"/></target></volume>`;
  const transport = sshTransport();
  const target = {
    name: 'kvm1',
    address: '127.0.0.1',
    port: host.port,
    user: stack.sshd.username,
    socket: stack.daemon.socket,
    uri: 'qemu:///system',
    privateKey: stack.sshd.clientKey,
    hostKey: {
      knownHosts: await readFile(stack.knownHostsFile, 'utf8'),
      knownHostsFile: stack.knownHostsFile,
    },
  };
  // libvirt's ssh transport runs `ssh` and `nc -U` on the host (netcat-openbsd).
  const virshUri = `qemu+ssh://${stack.sshd.username}@127.0.0.1:${host.port}/system?socket=${stack.daemon.socket}&keyfile=${stack.keyFile}&no_verify=1&no_tty=1&proxy=netcat`;
  const times = { ours: [] as number[], virsh: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const conn = await transport.open(target, AbortSignal.timeout(30_000));
    const vol = await c.storageVolCreateXml(pool, volXml(`ours-${round}.img`));
    let t0 = performance.now();
    await conn.seam.storageVolUpload(
      { vol, source: createReadStream(src, { highWaterMark: 1024 * 1024 }), length: size },
      AbortSignal.timeout(600_000),
    );
    times.ours.push((performance.now() - t0) / 1000);
    await conn.close();
    await c.storageVolDelete(vol);

    await c.storageVolCreateXml(pool, volXml(`virsh-${round}.img`));
    t0 = performance.now();
    await exec(
      'virsh',
      ['-q', '-c', virshUri, 'vol-upload', `virsh-${round}.img`, src, '--pool', stack.pool],
      {
        timeout: 600_000,
      },
    );
    times.virsh.push((performance.now() - t0) / 1000);
    await stack.virsh(['vol-delete', `virsh-${round}.img`, '--pool', stack.pool]);
  }
  const mibs = (s: number) => size / 1024 / 1024 / s;
  const ours = mibs(median(times.ours));
  const theirs = mibs(median(times.virsh));
  console.log(
    `\nimage upload through SSH, ${UPLOAD_MIB} MiB into a dir pool, median of ${ROUNDS} alternating rounds`,
  );
  console.log('');
  console.log(
    '| measure | kvm2 (libvirt-rpc over ssh2) | virsh -c qemu+ssh:// vol-upload | ratio |',
  );
  console.log('|---|---:|---:|---:|');
  console.log(
    `| MiB/s | ${ours.toFixed(1)} | ${theirs.toFixed(1)} | ${(ours / theirs).toFixed(2)}x |`,
  );
} finally {
  await raw?.close();
  await provider?.close?.();
  await stack.stop();
}

function request(name: string) {
  return {
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    port: 3128,
    cloudInit,
    placement: { zone: 'kvm1', machineType: 'small', image: 'guest' },
  };
}

/** The same devices the engine gives a BIOS guest without a bridge (its XML is not public). */
function domainXml(name: string, overlay: string, seed: string): string {
  return `<domain type="qemu"><name>${name}</name><memory unit="MiB">192</memory><vcpu>1</vcpu>
<os><type arch="x86_64" machine="pc">hvm</type><boot dev="hd"/></os><features><acpi/><apic/></features>
<devices>
<disk type="file" device="disk"><driver name="qemu" type="qcow2"/><source file="${overlay}"/><target dev="vda" bus="virtio"/></disk>
<disk type="file" device="cdrom"><driver name="qemu" type="raw"/><source file="${seed}"/><target dev="hdc" bus="ide"/><readonly/></disk>
<interface type="user"><model type="virtio"/></interface>
<channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
<serial type="pty"><target port="0"/></serial><console type="pty"><target type="serial" port="0"/></console>
<rng model="virtio"><backend model="random">/dev/urandom</backend></rng><video><model type="none"/></video>
</devices></domain>`;
}
