// Peer: the real daemons this package starts (Debian libvirt-daemon, openssh-server).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  buildTestGuest,
  LIBVIRTD_PEERS,
  SSHD_PEERS,
  startLibvirtd,
  startSshd,
  TEST_GUEST_MARK,
  TEST_GUEST_PEERS,
} from '../src/index.js';

const { expect, it } = vitest;
const exec = promisify(execFile);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describeWithPeers(vitest, 'startLibvirtd', [...LIBVIRTD_PEERS], () => {
  it('starts a daemon on a private socket that virsh can use, and stops it without a trace', async () => {
    const d = await startLibvirtd();
    try {
      expect(d.socket.startsWith(d.dir)).toBe(true);
      expect(await d.virsh('test:///default', ['list', '--all', '--name'])).toContain('test');
      expect(await d.virsh('qemu:///system', ['uri'])).toContain('qemu+unix:///system');
      expect(alive(d.pid)).toBe(true);
      // The QEMU driver answers through the daemon's private namespace.
      const caps = await d.virsh('qemu:///system', ['domcapabilities', '--virttype', 'qemu']);
      expect(caps).toContain('<domain>qemu</domain>');
    } finally {
      await d.stop();
    }
    expect(alive(d.pid)).toBe(false);
    expect(existsSync(d.dir)).toBe(false);
    expect((await exec('getent', ['passwd', 'libvirt-qemu'])).stdout).toContain('libvirt-qemu');
  });
});

describeWithPeers(
  vitest,
  'Libvirtd.restart',
  [...LIBVIRTD_PEERS, 'qemu-system-x86_64', 'virtlogd'],
  () => {
    it('restarts on the same socket: clients are cut off, definitions and running guests survive', {
      timeout: 120_000,
    }, async () => {
      const d = await startLibvirtd({ virtlogd: true });
      const name = `harness-restart-${process.pid}`;
      try {
        const xml = join(d.dir, 'dom.xml');
        const { writeFile } = await import('node:fs/promises');
        await writeFile(
          xml,
          `<domain type="qemu"><name>${name}</name><memory unit="MiB">32</memory><os><type arch="x86_64" machine="pc">hvm</type></os><devices><emulator>/usr/bin/qemu-system-x86_64</emulator><serial type="pty"><log file="/var/log/libvirt/qemu/${name}-console.log" append="off"/><target port="0"/></serial><console type="pty"><target type="serial" port="0"/></console><video><model type="none"/></video><memballoon model="none"/></devices></domain>`,
        );
        await d.virsh('qemu:///system', ['define', xml]);
        await d.virsh('qemu:///system', ['start', name]);
        const qemuPid = Number(
          (await readFile(join(d.dir, 'root', 'run', 'qemu', `${name}.pid`), 'utf8')).trim(),
        );
        expect(alive(qemuPid)).toBe(true);
        // A pty console logged through virtlogd works in the private /dev and log dir.
        expect(existsSync(join(d.dir, 'root', 'log', 'qemu', `${name}-console.log`))).toBe(true);
        // A client connected before the restart sees its connection end.
        const client = connect(d.socket);
        await new Promise<void>((resolve, reject) => {
          client.once('connect', resolve);
          client.once('error', reject);
        });
        const ended = new Promise<void>((resolve) => client.once('close', () => resolve()));
        const before = d.pid;
        await d.restart();
        await ended;
        expect(d.pid).not.toBe(before);
        expect(alive(before)).toBe(false);
        expect(alive(d.pid)).toBe(true);
        expect((await d.virsh('qemu:///system', ['domstate', name])).trim()).toBe('running');
        // The new daemon reconnects to the guest's monitor in a thread of its own, holding the
        // domain's job meanwhile; a destroy during it kills QEMU first, the reconnect then fails
        // and stops the domain, and the destroy reports it "not running". A monitor command takes
        // that job, so its answer shows the reconnect done (on a loaded machine it can take long
        // enough that libvirt's 30 s job wait runs out first: asked again until it answers).
        const monitor = async (): Promise<string> => {
          const end = Date.now() + 90_000;
          for (;;) {
            try {
              return await d.virsh('qemu:///system', [
                'qemu-monitor-command',
                name,
                '--hmp',
                'info status',
              ]);
            } catch (err) {
              if (Date.now() > end || !/cannot acquire state change lock/.test(String(err)))
                throw err;
            }
          }
        };
        expect(await monitor()).toMatch(/VM status: running/);
        expect(alive(qemuPid)).toBe(true);
        await d.virsh('qemu:///system', ['destroy', name]);
        await d.virsh('qemu:///system', ['undefine', name]);
      } catch (err) {
        // The daemon's own account (warnings and errors: a failed reconnect to the guest's
        // monitor shows here) goes with the failure, before stop() removes the dir.
        const log = await readFile(join(d.dir, 'libvirtd.log'), 'utf8').catch(() => '');
        console.error(`libvirtd.log, last lines:\n${log.split('\n').slice(-40).join('\n')}`);
        throw err;
      } finally {
        await d.stop();
      }
      expect(existsSync(d.dir)).toBe(false);
    });
  },
);

describeWithPeers(vitest, 'startSshd', [...SSHD_PEERS], () => {
  it('listens on 127.0.0.1 only and stops cleanly', async () => {
    const s = await startSshd();
    try {
      expect(s.host).toBe('127.0.0.1');
      const sock = connect(s.port, '127.0.0.1');
      const banner = await new Promise<string>((resolve, reject) => {
        sock.once('data', (d: Buffer) => resolve(d.toString()));
        sock.once('error', reject);
      });
      sock.destroy();
      expect(banner).toMatch(/^SSH-2\.0-OpenSSH/);
      expect(s.hostPublicKey).toMatch(/^ssh-ed25519 /);
    } finally {
      await s.stop();
    }
    const refused = await new Promise<boolean>((resolve) => {
      const sock = connect(s.port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve(false);
      });
      sock.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(existsSync(s.dir)).toBe(false);
  });
});

describeWithPeers(vitest, 'buildTestGuest', [...TEST_GUEST_PEERS], () => {
  it('builds a BIOS-bootable qcow2 from the installed packages once, then serves it from the cache', {
    timeout: 180_000,
  }, async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'proxy-op-guest-cache-'));
    try {
      const first = await buildTestGuest({ cacheDir });
      expect(first.built).toBe(true);
      expect(first.path.startsWith(cacheDir)).toBe(true);
      expect(basename(first.path)).toContain(first.kernelVersion);
      const info = JSON.parse(
        (await exec('qemu-img', ['info', '--output=json', first.path])).stdout,
      ) as { format: string; 'virtual-size': number };
      expect(info.format).toBe('qcow2');
      expect(info['virtual-size']).toBe(49 * 1024 * 1024);

      // The disk: SYSLINUX's MBR code, one bootable partition at 1 MiB.
      const raw = join(cacheDir, 'disk.raw');
      await exec('qemu-img', ['convert', '-O', 'raw', first.path, raw]);
      const mbr = (await readFile(raw)).subarray(0, 512);
      expect(mbr.readUInt16LE(510)).toBe(0xaa55);
      const syslinuxMbr = await readFile('/usr/lib/syslinux/mbr/mbr.bin');
      expect(mbr.subarray(0, 440).equals(syslinuxMbr.subarray(0, 440))).toBe(true);
      const table = JSON.parse((await exec('sfdisk', ['--json', raw])).stdout) as {
        partitiontable: { label: string; partitions: { start: number; bootable?: boolean }[] };
      };
      expect(table.partitiontable.label).toBe('dos');
      expect(table.partitiontable.partitions).toMatchObject([{ start: 2048, bootable: true }]);

      // The FAT partition holds the kernel, the initramfs and SYSLINUX.
      const files = (await exec('mdir', ['-a', '-b', '-i', `${raw}@@1M`, '::'])).stdout;
      for (const f of ['VMLINUZ', 'INITRD.GZ', 'SYSLINUX.CFG', 'LDLINUX.SYS', 'LDLINUX.C32']) {
        expect(files.toUpperCase()).toContain(f);
      }
      const listing = (
        await exec('/bin/sh', [
          '-ec',
          `mtype -i "${raw}@@1M" ::initrd.gz > "${cacheDir}/initrd.gz"; gzip -dc "${cacheDir}/initrd.gz" | cpio --quiet -it`,
        ])
      ).stdout.split('\n');
      expect(listing).toEqual(
        expect.arrayContaining(['init', 'bin/busybox', 'usr/sbin/qemu-ga', 'lib/modules/order']),
      );
      for (const m of ['virtio_pci.ko', 'virtio_console.ko', 'sr_mod.ko', 'isofs.ko']) {
        expect(listing).toContain(`lib/modules/${m}`);
      }
      const init = (
        await exec('/bin/sh', [
          '-ec',
          `gzip -dc "${cacheDir}/initrd.gz" | cpio --quiet -i --to-stdout init`,
        ])
      ).stdout;
      expect(init).toContain(`M=${TEST_GUEST_MARK}`);
      expect(init).toContain('org.qemu.guest_agent.0');
      await rm(raw);
      await rm(join(cacheDir, 'initrd.gz'));

      const second = await buildTestGuest({ cacheDir });
      expect(second).toEqual({ ...first, built: false, buildMs: 0 });
      expect(await readdir(cacheDir)).toEqual([basename(first.path)]);
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});
