// Peer: a real libvirtd (Debian libvirt-daemon, QEMU driver under TCG) through the production adapter over libvirt-rpc, held to the seam contract that seam.model.test.ts runs against the model.
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIBVIRTD_PEERS, type Libvirtd, startLibvirtd } from '@proxy-op/libvirt-harness';
import { connect, type LibvirtClient, unixDialer } from '@proxy-op/libvirt-rpc';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { clientSeam } from '../src/adapter.js';
import type { LibvirtSeam } from '../src/seam.js';
import { describeSeamContract } from './support/seam-contract.js';

const { afterAll, beforeAll } = vitest;
const pool = `sc-pool-${process.pid}`;

describeWithPeers(
  vitest,
  'a real libvirtd',
  [...LIBVIRTD_PEERS, 'qemu-system-x86_64', 'virtlogd'],
  () => {
    let daemon: Libvirtd;
    let client: LibvirtClient;
    let seam: LibvirtSeam;
    let image: Buffer;
    let dir: string;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'proxy-op-seam-'));
      await chmod(dir, 0o755);
      await runProcess('qemu-img', [
        'create',
        '-q',
        '-f',
        'qcow2',
        join(dir, 'image.qcow2'),
        '48M',
      ]);
      image = await readFile(join(dir, 'image.qcow2'));
      daemon = await startLibvirtd({ virtlogd: true });
      await daemon.virsh('qemu:///system', [
        'pool-define-as',
        pool,
        'dir',
        '--target',
        join(dir, 'pool'),
      ]);
      await daemon.virsh('qemu:///system', ['pool-build', pool]);
      await daemon.virsh('qemu:///system', ['pool-start', pool]);
      client = await connect({ dialer: unixDialer(daemon.socket), uri: 'qemu:///system' });
      seam = clientSeam(client);
    });

    afterAll(async () => {
      await client?.close();
      await daemon?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    describeSeamContract(vitest, 'the seam contract on the production adapter', () => ({
      seam,
      pool,
      image,
      domainType: 'qemu',
      setPoolActive: async (active) => {
        await daemon.virsh('qemu:///system', [active ? 'pool-start' : 'pool-destroy', pool]);
      },
    }));
  },
);
