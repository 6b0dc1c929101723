// Peer: real libvirtd (QEMU driver, TCG) and a real Linux guest with qemu-guest-agent, booted from an image built from Debian packages, reading a NoCloud seed built by @proxy-op/nocloud; virsh on the same daemon as the oracle.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildTestGuest,
  type Libvirtd,
  startLibvirtd,
  TEST_GUEST_BOOT_BUDGET_MS,
  TEST_GUEST_MARK,
  TEST_GUEST_PEERS,
  type TestGuest,
} from '@proxy-op/libvirt-harness';
import { buildSeedISO } from '@proxy-op/nocloud';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  connect,
  type Domain,
  type DomainInterface,
  DomainState,
  DomainUndefineFlags,
  ErrorCode,
  InterfaceAddressSource,
  isLibvirtError,
  type LibvirtClient,
  MetadataType,
  type StoragePool,
  type StorageVol,
  unixDialer,
} from '../src/index.js';
import { DAEMON_PEERS, sha256 } from './support/real.js';

const { afterAll, beforeAll, expect, it } = vitest;

const NS = 'https://proxy-op.dev/xmlns/instance';
const name = `rpc-guest-${process.pid}`;
const pool = `rpc-guest-${process.pid}`;
const mac = '52:54:00:5e:00:2a';
// The guest image is built once per machine and kept outside the repo.
const cacheDir = join(tmpdir(), 'proxy-op-test-guest');

// user-data is written byte for byte, never parsed: a cloud-config head, a
// fresh nonce (so an old console cannot pass), UTF-8, CRLF and every byte value.
const userData = Buffer.concat([
  Buffer.from(`#cloud-config\n# nonce ${randomBytes(16).toString('hex')}\r\n# grüße €\n`),
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
]);

function domainXml(disk: string, seed: string, consoleFile: string): string {
  return `<domain type="qemu">
  <name>${name}</name>
  <metadata><po:instance xmlns:po="${NS}" uid="7f3a"/></metadata>
  <memory unit="MiB">192</memory>
  <vcpu>1</vcpu>
  <os><type arch="x86_64" machine="pc">hvm</type><boot dev="hd"/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type="file" device="disk">
      <driver name="qemu" type="qcow2"/>
      <source file="${disk}"/>
      <target dev="vda" bus="virtio"/>
    </disk>
    <disk type="file" device="cdrom">
      <driver name="qemu" type="raw"/>
      <source file="${seed}"/>
      <target dev="hdc" bus="ide"/>
      <readonly/>
    </disk>
    <interface type="user"><mac address="${mac}"/><model type="virtio"/></interface>
    <channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
    <serial type="file"><source path="${consoleFile}"/><target port="0"/></serial>
    <video><model type="none"/></video>
    <memballoon model="none"/>
  </devices>
</domain>`;
}

/** The 4th column (`address/prefix`) of `virsh domifaddr` lines, IPv4 only. */
function virshIpv4(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols[2] === 'ipv4' && cols[3] !== undefined)
    .map((cols) => cols[3]!)
    .sort();
}

/** The guest's base64 dump of a seed file between its begin and end lines. */
function dumped(consoleText: string, file: string): Buffer | undefined {
  const lines = consoleText.split(/\r?\n/);
  const begin = lines.indexOf(`${TEST_GUEST_MARK} begin ${file}`);
  const end = lines.indexOf(`${TEST_GUEST_MARK} end ${file}`);
  if (begin < 0 || end < begin) return undefined;
  return Buffer.from(lines.slice(begin + 1, end).join(''), 'base64');
}

describeWithPeers(
  vitest,
  'a real Linux guest under libvirt, reporting its address through qemu-guest-agent',
  [...DAEMON_PEERS, 'qemu-system-x86_64', 'virtlogd', ...TEST_GUEST_PEERS],
  () => {
    let guest: TestGuest;
    let daemon: Libvirtd;
    let c: LibvirtClient;
    let dir: string;
    let p: StoragePool;
    const vols: StorageVol[] = [];
    let dom: Domain | undefined;

    beforeAll(async () => {
      guest = await buildTestGuest({ cacheDir });
      // QEMU runs as libvirt-qemu: the pool and console dir must be reachable.
      dir = await mkdtemp(join(tmpdir(), 'proxy-op-guest-'));
      await chmod(dir, 0o755);
      daemon = await startLibvirtd({ virtlogd: true });
      c = await connect({ dialer: unixDialer(daemon.socket), uri: 'qemu:///system' });
      await daemon.virsh('qemu:///system', ['pool-create-as', pool, 'dir', '--target', dir]);
      p = await c.storagePoolLookupByName(pool);
    }, 300_000);

    afterAll(async () => {
      if (dom !== undefined) {
        await c.domainDestroyFlags(dom, 0).catch(() => {});
        await c.domainUndefineFlags(dom, 0).catch(() => {});
      }
      for (const v of vols.reverse()) await c?.storageVolDelete(v).catch(() => {});
      await c?.close();
      await daemon?.virsh('qemu:///system', ['pool-destroy', pool]).catch(() => {});
      await daemon?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('boots from an uploaded image, reads the seed byte for byte, and reports 10.0.2.15 through the agent', {
      timeout: TEST_GUEST_BOOT_BUDGET_MS + 120_000,
    }, async () => {
      // The image goes up through this client, and libvirt sees it as the qcow2 it is.
      const info = JSON.parse(
        (await runProcess('qemu-img', ['info', '--output=json', guest.path])).stdout,
      ) as { format: string; 'virtual-size': number };
      expect(info.format).toBe('qcow2');
      const base = await c.storageVolCreateXml(
        p,
        `<volume><name>base.qcow2</name><capacity unit="bytes">${guest.bytes}</capacity><target><format type="raw"/></target></volume>`,
      );
      vols.push(base);
      await c.storageVolUpload(base, createReadStream(guest.path), { timeoutMs: 120_000 });
      await c.storagePoolRefresh(p);
      const basePath = await c.storageVolGetPath(base);
      expect(sha256(await readFile(basePath))).toBe(sha256(await readFile(guest.path)));
      expect((await c.storageVolGetInfo(base)).capacity).toBe(info['virtual-size']);

      // A provider boots a copy-on-write overlay of the base image.
      const overlay = await c.storageVolCreateXml(
        p,
        `<volume><name>${name}.qcow2</name><capacity unit="bytes">${info['virtual-size']}</capacity><target><format type="qcow2"/></target><backingStore><path>${basePath}</path><format type="qcow2"/></backingStore></volume>`,
      );
      vols.push(overlay);
      const overlayPath = await c.storageVolGetPath(overlay);
      const overlayInfo = JSON.parse(
        (await runProcess('qemu-img', ['info', '--output=json', overlayPath])).stdout,
      ) as { 'backing-filename'?: string };
      expect(overlayInfo['backing-filename']).toBe(basePath);

      const iso = buildSeedISO({ instanceId: name, userData, installGuestAgent: false });
      const seed = await c.storageVolCreateXml(
        p,
        `<volume><name>${name}-seed.iso</name><capacity unit="bytes">${iso.byteLength}</capacity><target><format type="raw"/></target></volume>`,
      );
      vols.push(seed);
      await c.storageVolUpload(seed, [iso]);
      const seedPath = await c.storageVolGetPath(seed);

      const consoleFile = join(dir, `${name}.console.log`);
      dom = await c.domainDefineXmlFlags(domainXml(overlayPath, seedPath, consoleFile), 1);
      const started = Date.now();
      await c.domainCreate(dom);
      const running = await c.domainLookupByName(name);
      expect(await c.domainGetState(running)).toMatchObject({ state: DomainState.RUNNING });

      // Until the guest's agent is up, the agent source fails; then it answers.
      let lastError: unknown;
      let eth0: DomainInterface | undefined;
      while (eth0 === undefined && Date.now() - started < TEST_GUEST_BOOT_BUDGET_MS) {
        try {
          const ifaces = await c.domainInterfaceAddresses(running, InterfaceAddressSource.AGENT);
          eth0 = ifaces.find((i) => i.addrs.some((a) => a.addr === '10.0.2.15'));
        } catch (err) {
          lastError = err;
          expect(isLibvirtError(err)).toBe(true);
        }
        if (eth0 === undefined) await new Promise((r) => setTimeout(r, 500));
      }
      const bootToAddressMs = Date.now() - started;
      if (eth0 === undefined) {
        throw new Error(
          `no 10.0.2.15 from the agent within ${TEST_GUEST_BOOT_BUDGET_MS / 1000} s (last error: ${String(lastError)}); console:\n${await readFile(consoleFile, 'utf8').catch(() => '')}`,
        );
      }
      console.info(`guest: agent reported 10.0.2.15 ${bootToAddressMs} ms after domainCreate`);
      expect(eth0.name).toBe('eth0');
      expect(eth0.hwaddr).toBe(mac);

      // virsh asks the same agent through the same daemon: the same IPv4 addresses.
      const ifaces = await c.domainInterfaceAddresses(running, InterfaceAddressSource.AGENT);
      const ours = ifaces
        .flatMap((i) => i.addrs.filter((a) => a.type === 0).map((a) => `${a.addr}/${a.prefix}`))
        .sort();
      expect(ours).toEqual(['10.0.2.15/24', '127.0.0.1/8']);
      const oracle = await daemon.virsh('qemu:///system', ['domifaddr', name, '--source', 'agent']);
      expect(virshIpv4(oracle)).toEqual(ours);
      expect(oracle).toContain(mac);

      // A real Linux kernel mounted our ISO from the IDE CD-ROM and read user-data intact.
      const text = await readFile(consoleFile, 'utf8');
      expect(text).toContain(`${TEST_GUEST_MARK} init ${guest.kernelVersion}`);
      // Found by busybox findfs itself: the seed is padded to the 68 KiB its probe reads.
      expect(text).toMatch(new RegExp(`${TEST_GUEST_MARK} seed /dev/sr0 findfs`));
      expect(text).toContain(
        `${TEST_GUEST_MARK} file user-data ${userData.byteLength} ${sha256(userData)}`,
      );
      expect(dumped(text, 'user-data')?.equals(userData)).toBe(true);
      expect(dumped(text, 'meta-data')?.toString()).toBe(
        `instance-id: "${name}"\nlocal-hostname: "${name}"\n`,
      );
      expect(text).toContain(`${TEST_GUEST_MARK} address 10.0.2.15/24`);
      expect(text).not.toContain(`${TEST_GUEST_MARK} error`);

      // Metadata on the running guest, read back here and by virsh.
      const uid = '<instance uid="a1b2" phase="ready"/>';
      await c.domainSetMetadata(running, MetadataType.ELEMENT, uid, 'po', NS);
      expect(await c.domainGetMetadata(running, MetadataType.ELEMENT, NS)).toMatch(
        /uid="a1b2" phase="ready"/,
      );
      expect(await daemon.virsh('qemu:///system', ['metadata', name, NS])).toMatch(
        /uid="a1b2" phase="ready"/,
      );

      // Guest agent commands: a file written through this client, read back through virsh.
      const agent = async (execute: string, args?: Record<string, unknown>) => {
        const cmd = JSON.stringify(args === undefined ? { execute } : { execute, arguments: args });
        const out = await c.domainQemuAgentCommand(running, cmd, 30);
        return (JSON.parse(out ?? 'null') as { return: unknown }).return;
      };
      expect(await agent('guest-ping')).toEqual({});
      const payload = Buffer.from(
        `user:$6$rounds=1000$salt$hash\nü ${randomBytes(8).toString('hex')}\n`,
      );
      const handle = (await agent('guest-file-open', {
        path: '/run/agent-test',
        mode: 'w',
      })) as number;
      expect(typeof handle).toBe('number');
      const wrote = (await agent('guest-file-write', {
        handle,
        'buf-b64': payload.toString('base64'),
      })) as { count: number };
      expect(wrote.count).toBe(payload.byteLength);
      await agent('guest-file-close', { handle });
      const virshAgent = async (cmd: object) =>
        (
          JSON.parse(
            await daemon.virsh('qemu:///system', ['qemu-agent-command', name, JSON.stringify(cmd)]),
          ) as { return: unknown }
        ).return;
      const h2 = (await virshAgent({
        execute: 'guest-file-open',
        arguments: { path: '/run/agent-test', mode: 'r' },
      })) as number;
      const read = (await virshAgent({
        execute: 'guest-file-read',
        arguments: { handle: h2, count: 4096 },
      })) as { 'buf-b64': string };
      await virshAgent({ execute: 'guest-file-close', arguments: { handle: h2 } });
      expect(Buffer.from(read['buf-b64'], 'base64').equals(payload)).toBe(true);
      // A command the agent does not know: libvirt's error, with the agent's words in it.
      const unknown = await c
        .domainQemuAgentCommand(running, '{"execute":"guest-no-such-command"}', 30)
        .catch((e: unknown) => e);
      expect(isLibvirtError(unknown)).toBe(true);
      expect((unknown as Error).message).toMatch(/guest-no-such-command/);

      // Stop, undefine and remove everything, each checked.
      await c.domainDestroyFlags(running, 0);
      expect((await daemon.virsh('qemu:///system', ['domstate', name])).trim()).toBe('shut off');
      const stopped = await c
        .domainQemuAgentCommand(running, '{"execute":"guest-ping"}', 5)
        .catch((e: unknown) => e);
      expect(isLibvirtError(stopped) && stopped.code).toBe(ErrorCode.ERR_OPERATION_INVALID);
      const gone = await c
        .domainInterfaceAddresses(running, InterfaceAddressSource.AGENT)
        .catch((e: unknown) => e);
      expect(isLibvirtError(gone, ErrorCode.ERR_OPERATION_INVALID)).toBe(true);
      await c.domainUndefineFlags(
        dom,
        DomainUndefineFlags.MANAGED_SAVE | DomainUndefineFlags.SNAPSHOTS_METADATA,
      );
      dom = undefined;
      expect(
        isLibvirtError(
          await c.domainLookupByName(name).catch((e: unknown) => e),
          ErrorCode.ERR_NO_DOMAIN,
        ),
      ).toBe(true);
      for (const v of vols.splice(0).reverse()) await c.storageVolDelete(v);
      expect((await daemon.virsh('qemu:///system', ['vol-list', pool])).trim()).toBe('');
    });
  },
);
