// Peer: the real daemons this package starts (Debian libvirt-daemon, openssh-server).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { LIBVIRTD_PEERS, SSHD_PEERS, startLibvirtd, startSshd } from '../src/index.js';

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
