// Peer: the real programs the cloud guest and its stack are made with: debootstrap from Debian's
// mirror, mkfs.ext4, SYSLINUX, qemu-img; debugfs and sfdisk read the image back; unshare and
// nsenter for the network namespace; the real libvirtd, dnsmasq, sshd and curl in it.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  buildCloudGuest,
  CLOUD_GUEST_PACKAGES,
  CLOUD_GUEST_PEERS,
  CLOUD_NETWORK,
  CLOUD_STACK_PEERS,
  DEFAULT_DEBIAN_MIRROR,
  debianMirror,
  sha256Of,
  startCloudStack,
  startNetworkNamespace,
} from '../src/index.js';

const { describe, expect, it } = vitest;
const exec = promisify(execFile);

describe('debianMirror', () => {
  it('takes the first source of the suite itself from sources.list and sources.list.d', async () => {
    const etc = await mkdtemp(join(tmpdir(), 'proxy-op-apt-'));
    try {
      await mkdir(join(etc, 'sources.list.d'));
      expect(await debianMirror('bookworm', etc)).toBe(DEFAULT_DEBIAN_MIRROR);
      await writeFile(
        join(etc, 'sources.list.d', 'a.sources'),
        [
          'Types: deb',
          'URIs: http://security.example/debian-security',
          'Suites: bookworm-security',
          '',
          'Types: deb',
          'Enabled: no',
          'URIs: http://off.example/debian',
          'Suites: bookworm',
          '',
          '# a comment',
          'Types: deb deb-src',
          'URIs: http://mirror.example/debian/',
          'Suites: bookworm bookworm-updates',
          'Components: main',
          '',
        ].join('\n'),
      );
      expect(await debianMirror('bookworm', etc)).toBe('http://mirror.example/debian');
      expect(await debianMirror('trixie', etc)).toBe(DEFAULT_DEBIAN_MIRROR);
      // sources.list comes first, options in brackets and comments allowed.
      await writeFile(
        join(etc, 'sources.list'),
        '# deb http://commented.example/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://list.example/debian bookworm main\n',
      );
      expect(await debianMirror('bookworm', etc)).toBe('http://list.example/debian');
    } finally {
      await rm(etc, { recursive: true, force: true });
    }
  });
});

describeWithPeers(vitest, 'buildCloudGuest', [...CLOUD_GUEST_PEERS, 'debugfs'], () => {
  it('builds a bootable 1 GiB qcow2 of a Debian root with the packages, once per cache key', {
    timeout: 1_200_000,
  }, async () => {
    const first = await buildCloudGuest();
    console.log(
      `cloud guest: ${first.built ? `built in ${(first.buildMs / 1000).toFixed(1)} s` : 'from the cache'}, ${first.bytes} bytes, Debian ${first.suite} from ${first.mirror}`,
    );
    const again = await buildCloudGuest();
    expect(again).toEqual({ ...first, built: false, buildMs: 0 });
    const info = JSON.parse(
      (await exec('qemu-img', ['info', '--output=json', first.path])).stdout,
    ) as { format: string; 'virtual-size': number };
    expect([info.format, info['virtual-size']]).toEqual(['qcow2', 2 ** 30]);

    const work = await mkdtemp(join(tmpdir(), 'proxy-op-cloud-guest-test-'));
    try {
      const raw = join(work, 'disk.raw');
      await exec('qemu-img', ['convert', '-O', 'raw', first.path, raw]);
      const table = JSON.parse((await exec('sfdisk', ['--json', raw])).stdout) as {
        partitiontable: { partitions: Array<{ start: number; type: string; bootable?: boolean }> };
      };
      const [boot, root] = table.partitiontable.partitions;
      expect([boot?.start, boot?.type, boot?.bootable]).toEqual([2048, '6', true]);
      expect(root?.type).toBe('83');
      // The root file system, read in place (no mount): debugfs at the partition's offset.
      const debugfs = async (request: string) => {
        const fs = `${raw}?offset=${(root?.start ?? 0) * 512}`;
        const r = await exec('debugfs', ['-R', request, fs], { maxBuffer: 64 * 1024 * 1024 });
        return `${r.stdout}${r.stderr}`;
      };
      const cat = (path: string) => debugfs(`cat ${path}`);
      const status = await cat('/var/lib/dpkg/status');
      for (const pkg of CLOUD_GUEST_PACKAGES) {
        expect(status, pkg).toMatch(
          new RegExp(`^Package: ${pkg}\\nStatus: install ok installed$`, 'm'),
        );
      }
      expect(await cat('/etc/cloud/cloud.cfg.d/90_image.cfg')).toContain(
        'datasource_list: [ NoCloud, None ]',
      );
      // Each VM makes its own machine ID; the build's policy-rc.d is gone.
      expect(await debugfs('stat /etc/machine-id')).toMatch(/Size: 0\b/);
      expect(await debugfs('stat /usr/sbin/policy-rc.d')).toContain('File not found');
      expect(await cat(`/lib/modules/${first.kernelVersion}/modules.dep`)).toContain(
        'virtio_net.ko',
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describeWithPeers(vitest, 'startNetworkNamespace', ['unshare', 'nsenter', 'ip'], () => {
  it('holds a namespace with loopback only, runs commands in it, and goes on stop', async () => {
    const ns = await startNetworkNamespace();
    const links = (await ns.exec('ip', ['-o', 'link'])).stdout;
    expect(
      links
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(':')[1]?.trim()),
    ).toEqual(['lo']);
    // Its own sysfs: /sys/class/net lists the namespace's devices.
    expect((await ns.exec('ls', ['/sys/class/net'])).stdout.trim()).toBe('lo');
    expect((await ns.exec('pwd', [])).stdout.trim()).toBe(process.cwd());
    await ns.stop();
    expect(() => process.kill(ns.pid, 0)).toThrow();
  });
});

describeWithPeers(vitest, 'startCloudStack', [...CLOUD_STACK_PEERS], () => {
  it('runs libvirtd, its network and dnsmasq, sshd and the servers in a namespace routed nowhere', {
    timeout: 1_200_000,
  }, async () => {
    const stack = await startCloudStack();
    try {
      expect(await stack.virsh(['net-list', '--name'])).toContain(CLOUD_NETWORK.name);
      const addrs = (
        await stack.netns.exec('ip', ['-o', '-4', 'addr', 'show', CLOUD_NETWORK.bridge])
      ).stdout;
      expect(addrs).toContain(`${CLOUD_NETWORK.gateway}/${CLOUD_NETWORK.prefix}`);
      expect(addrs).toContain(`${CLOUD_NETWORK.outsider}/32`);
      // Nothing leaves the namespace: no default route, only the bridge's network.
      const routes = (await stack.netns.exec('ip', ['-4', 'route'])).stdout.trim().split('\n');
      expect(routes.map((r) => r.split(' ').slice(0, 3).join(' '))).toEqual([
        `192.168.150.0/24 dev ${CLOUD_NETWORK.bridge}`,
      ]);
      const ps = (await stack.netns.exec('ps', ['-eo', 'comm'])).stdout;
      expect(ps).toContain('dnsmasq');
      const origin = await stack.netns.exec('curl', ['-sS', stack.origin.url('/x')]);
      expect(JSON.parse(origin.stdout)).toMatchObject({ origin: true, url: '/x' });
      const image = join(stack.dir, 'image.qcow2');
      await stack.netns.exec('curl', ['-sS', '-o', image, stack.imageUrl]);
      expect(await sha256Of(image)).toBe(stack.imageSha);
      expect(stack.config()).toMatchObject({
        hosts: [{ name: 'kvm1', bridge: CLOUD_NETWORK.bridge, domainType: 'qemu' }],
        images: { debian: { url: stack.imageUrl, sha256: stack.imageSha } },
      });
    } finally {
      await stack.stop();
    }
  });
});
