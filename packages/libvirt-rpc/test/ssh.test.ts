// Peer: a real sshd (Debian openssh-server) on 127.0.0.1 forwarding to a real libvirtd's socket.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type Libvirtd, type Sshd, startLibvirtd, startSshd } from '@proxy-op/libvirt-harness';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { connect, type LibvirtClient, RpcError, unixDialer } from '../src/index.js';
import { SshDialError, type SshDialerOptions, sshDialer } from '../src/ssh.js';
import {
  createDirPool,
  DAEMON_PEERS,
  endless,
  random,
  readAll,
  sha256,
  volXml,
} from './support/real.js';
import { relay } from './support/relay.js';

const { afterAll, beforeAll, expect, it } = vitest;
const exec = promisify(execFile);

describeWithPeers(
  vitest,
  'libvirt over a real sshd',
  [...DAEMON_PEERS, 'sshd', 'ssh-keygen'],
  () => {
    let daemon: Libvirtd;
    let sshd: Sshd;
    let base: SshDialerOptions;
    const pool = `po-ssh-${process.pid}`;

    beforeAll(async () => {
      daemon = await startLibvirtd();
      sshd = await startSshd();
      await createDirPool(daemon, pool);
      base = {
        host: sshd.host,
        port: sshd.port,
        username: sshd.username,
        privateKey: sshd.clientKey,
        hostKey: { knownHostsFile: sshd.knownHostsFile },
        socketPath: daemon.socket,
      };
    });

    afterAll(async () => {
      await daemon?.virsh('qemu:///system', ['pool-destroy', pool]).catch(() => {});
      await sshd?.stop();
      await daemon?.stop();
    });

    async function both(uri: string): Promise<[LibvirtClient, LibvirtClient]> {
      return [
        await connect({ dialer: unixDialer(daemon.socket), uri }),
        await connect({ dialer: sshDialer(base), uri }),
      ];
    }

    it('answers the same calls through SSH as through the unix socket', async () => {
      const [local, remote] = await both('test:///default');
      try {
        expect(await remote.connectGetLibVersion()).toBe(await local.connectGetLibVersion());
        expect(await remote.connectGetHostname()).toBe(await local.connectGetHostname());
        const names = async (c: LibvirtClient) =>
          (await c.connectListAllDomains()).map((d) => d.name).sort();
        expect(await names(remote)).toEqual(await names(local));
        const dom = await remote.domainLookupByName('test');
        expect(await remote.domainGetState(dom)).toEqual(await local.domainGetState(dom));
        expect(await remote.domainGetXmlDesc(dom)).toBe(await local.domainGetXmlDesc(dom));
        const err = await remote.domainLookupByName('nope').catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'LibvirtError', code: 42 });
      } finally {
        await local.close();
        await remote.close();
      }
    });

    it('uploads and downloads a volume through SSH byte for byte', async () => {
      const c = await connect({ dialer: sshDialer(base), uri: 'qemu:///system' });
      try {
        const p = await c.storagePoolLookupByName(pool);
        const size = 5 * 1024 * 1024 + 3;
        const vol = await c.storageVolCreateXml(p, volXml('ssh.img', size));
        const data = random(size);
        await c.storageVolUpload(vol, [data]);
        const path = await c.storageVolGetPath(vol);
        const { readFile } = await import('node:fs/promises');
        expect(sha256(await readFile(path))).toBe(sha256(data));
        expect(sha256(await readAll(await c.storageVolDownload(vol)))).toBe(sha256(data));
        await c.storageVolDelete(vol);
      } finally {
        await c.close();
      }
    });

    it('accepts the host key by pinned fingerprint and by the insecure switch', async () => {
      const fp = (
        await exec('ssh-keygen', ['-l', '-f', `${sshd.dir}/host_ed25519.pub`])
      ).stdout.split(/\s+/)[1]!;
      for (const hostKey of [
        { pinned: fp },
        { pinned: sshd.hostPublicKey },
        { insecureIgnoreHostKey: true as const },
      ]) {
        const c = await connect({
          dialer: sshDialer({ ...base, hostKey }),
          uri: 'test:///default',
        });
        expect(await c.connectGetHostname()).toBeTruthy();
        await c.close();
      }
    });

    it('refuses a host key that does not match, before authenticating', async () => {
      await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', `${sshd.dir}/other`]);
      const other = `${sshd.dir}/other.pub`;
      const { readFile } = await import('node:fs/promises');
      const otherKey = (await readFile(other, 'utf8')).trim().split(/\s+/);
      const wrongKnownHosts = `[127.0.0.1]:${sshd.port} ${otherKey[0]} ${otherKey[1]}\n`;
      for (const hostKey of [
        { knownHosts: wrongKnownHosts },
        { knownHosts: `[127.0.0.1]:1 ${sshd.hostPublicKey}\n` }, // right key, wrong port
        { pinned: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
      ]) {
        const err = await connect({
          dialer: sshDialer({ ...base, hostKey }),
          uri: 'test:///default',
        }).catch((e: unknown) => e);
        expect(SshDialError.isInstance(err) && err.stage).toBe('hostkey');
      }
    });

    it('reports a refused client key as an auth failure', async () => {
      const { readFile } = await import('node:fs/promises');
      await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', `${sshd.dir}/stranger`]);
      const err = await connect({
        dialer: sshDialer({ ...base, privateKey: await readFile(`${sshd.dir}/stranger`, 'utf8') }),
        uri: 'test:///default',
      }).catch((e: unknown) => e);
      expect(SshDialError.isInstance(err) && err.code).toBe('ERR_SSH_AUTH');
      expect(String((err as Error).message)).not.toMatch(/PRIVATE KEY/);
    });

    it('reports a wrong socket path as a channel failure', async () => {
      const err = await connect({
        dialer: sshDialer({ ...base, socketPath: `${daemon.dir}/missing-sock` }),
        uri: 'test:///default',
      }).catch((e: unknown) => e);
      expect(SshDialError.isInstance(err) && err.stage).toBe('channel');
    });

    it('fails the upload and every pending call when the SSH connection is cut mid-upload', async () => {
      const r = await relay(sshd.port);
      const c = await connect({
        dialer: sshDialer({ ...base, port: r.port, hostKey: { insecureIgnoreHostKey: true } }),
        uri: 'qemu:///system',
        keepalive: false,
      });
      try {
        const p = await c.storagePoolLookupByName(pool);
        const vol = await c.storageVolCreateXml(p, volXml('cut.img', 1 << 30));
        const counter = { n: 0 };
        const upload = c.storageVolUpload(vol, endless(Buffer.alloc(256 * 1024, 2), counter));
        upload.catch(() => {});
        while (counter.n < 20) await new Promise((res) => setTimeout(res, 5));
        const others = Array.from({ length: 5 }, () =>
          c.connectGetLibVersion().catch((e: unknown) => e),
        );
        r.cut();
        const err = await upload.catch((e: unknown) => e);
        expect(RpcError.isInstance(err) && err.code).toBe('ERR_RPC_CLOSED');
        for (const o of await Promise.all(others)) {
          // Each either was answered before the cut or failed with the connection.
          if (typeof o !== 'number') expect(o).toMatchObject({ code: 'ERR_RPC_CLOSED' });
        }
        expect(c.rpc.pendingCount).toBe(0);
        const reads = counter.n;
        await new Promise((res) => setTimeout(res, 50));
        expect(counter.n).toBe(reads);
      } finally {
        await c.close();
        await r.close();
      }
      // The daemon is unharmed: a fresh SSH connection can remove the half-written volume.
      const again = await connect({ dialer: sshDialer(base), uri: 'qemu:///system' });
      const p = await again.storagePoolLookupByName(pool);
      const vol = await again.storageVolLookupByName(p, 'cut.img');
      await again.storageVolDelete(vol);
      await again.close();
    });
  },
);
