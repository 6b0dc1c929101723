// Peer: the real daemons this package starts (libvirtd, virtlogd, a QEMU guest, sshd), owned by a
// child Node process that is then killed.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  CLOUD_STACK_PEERS,
  LIBVIRTD_PEERS,
  SSHD_PEERS,
  startCloudStack,
  startLibvirtd,
} from '../src/index.js';
import { pidsIn } from '../src/netns.js';

const { expect, it } = vitest;
const DIST = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;

/** Whether `pid` runs (a zombie, killed but not yet reaped, does not). */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && !stat.split(') ')[1]?.startsWith('Z');
}

async function anyAlive(pids: readonly number[]): Promise<boolean> {
  for (const pid of pids) if (await alive(pid)) return true;
  return false;
}

/** Processes whose environment holds `DIR=<dir>`: a sentinel watching `dir`. */
async function sentinelsOf(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const p of await readdir('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const env = await readFile(`/proc/${p}/environ`, 'utf8').catch(() => '');
    if (env.split('\0').includes(`DIR=${dir}`)) found.push(Number(p));
  }
  return found;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const OWNER = `
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startLibvirtd, startSshd } from ${JSON.stringify(DIST)};
const d = await startLibvirtd({ virtlogd: true });
const name = 'sentinel-guest';
const xml = join(d.dir, 'dom.xml');
await writeFile(xml, '<domain type="qemu"><name>' + name + '</name><memory unit="MiB">32</memory><os><type arch="x86_64" machine="pc">hvm</type></os><devices><emulator>/usr/bin/qemu-system-x86_64</emulator><video><model type="none"/></video><memballoon model="none"/></devices></domain>');
await d.virsh('qemu:///system', ['define', xml]);
await d.virsh('qemu:///system', ['start', name]);
const qemu = Number((await readFile(join(d.dir, 'root', 'run', 'qemu', name + '.pid'), 'utf8')).trim());
const virtlogd = Number((await readFile(join(d.dir, 'virtlogd.pid'), 'utf8')).trim());
const s = await startSshd();
// sshd writes its pid file only after it logs that it listens: the handle's pid is certain.
console.log(JSON.stringify({ libvirtd: d.pid, qemu, virtlogd, sshd: s.pid, dirs: [d.dir, s.dir] }));
setInterval(() => {}, 60_000);
`;

const CLOUD_OWNER = `
import { readlink } from 'node:fs/promises';
import { startCloudStack } from ${JSON.stringify(DIST)};
const s = await startCloudStack();
const ns = await readlink('/proc/' + s.netns.pid + '/ns/net');
console.log(JSON.stringify({ ns, libvirtd: s.daemon.pid, sshd: s.sshd.pid, dirs: [s.dir, s.daemon.dir, s.sshd.dir] }));
setInterval(() => {}, 60_000);
`;

describeWithPeers(vitest, 'a killed owner of a cloud stack', [...CLOUD_STACK_PEERS], () => {
  it('leaves no process in its network namespace (libvirtd, dnsmasq, sshd, the servers) and no dir', {
    timeout: 1_200_000,
  }, async () => {
    const work = await mkdtemp(join(tmpdir(), 'harness-sentinel-'));
    const script = join(work, 'owner.mjs');
    await writeFile(script, CLOUD_OWNER);
    const owner = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const [line] = (await once(createInterface({ input: owner.stdout }), 'line')) as [string];
      const got = JSON.parse(line) as {
        ns: string;
        libvirtd: number;
        sshd: number;
        dirs: string[];
      };
      const inside = await pidsIn(got.ns);
      // The holder, libvirtd, dnsmasq (two), sshd, the image server and the origin at least.
      expect(inside.length, JSON.stringify(got)).toBeGreaterThanOrEqual(7);
      expect(inside).toEqual(expect.arrayContaining([got.libvirtd, got.sshd]));
      owner.kill('SIGKILL');
      await once(owner, 'exit');
      await until('the namespace empty', async () => (await pidsIn(got.ns)).length === 0, 20_000);
      await until('every dir removed', () => !got.dirs.some((d) => existsSync(d)), 20_000);
    } finally {
      owner.kill('SIGKILL');
      await rm(work, { recursive: true, force: true });
    }
  });
});

describeWithPeers(vitest, 'a cloud stack stopped normally', [...CLOUD_STACK_PEERS], () => {
  it('leaves no process in its network namespace (dnsmasq detaches from libvirtd)', {
    timeout: 1_200_000,
  }, async () => {
    const s = await startCloudStack();
    const ns = await readlink(`/proc/${s.netns.pid}/ns/net`);
    expect((await pidsIn(ns)).length).toBeGreaterThan(0);
    await s.stop();
    expect(await pidsIn(ns)).toEqual([]);
  });
});

describeWithPeers(
  vitest,
  'a killed owner leaves nothing behind',
  [...LIBVIRTD_PEERS, ...SSHD_PEERS, 'qemu-system-x86_64', 'virtlogd'],
  () => {
    it('kills libvirtd, virtlogd, a running guest and sshd, and removes their dirs', {
      timeout: 120_000,
    }, async () => {
      const work = await mkdtemp(join(tmpdir(), 'harness-sentinel-'));
      const script = join(work, 'owner.mjs');
      await writeFile(script, OWNER);
      const owner = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const [line] = (await once(createInterface({ input: owner.stdout }), 'line')) as [string];
        const got = JSON.parse(line) as {
          libvirtd: number;
          qemu: number;
          virtlogd: number;
          sshd: number;
          dirs: string[];
        };
        const pids = [got.libvirtd, got.qemu, got.virtlogd, got.sshd];
        expect(
          pids.every((pid) => Number.isInteger(pid) && pid > 1),
          JSON.stringify(got),
        ).toBe(true);
        for (const pid of pids) expect(await alive(pid), String(pid)).toBe(true);
        for (const dir of got.dirs) expect(await sentinelsOf(dir)).toHaveLength(1);
        owner.kill('SIGKILL');
        await once(owner, 'exit');
        await until('every process gone', async () => !(await anyAlive(pids)), 20_000).catch(
          async (err: Error) => {
            const left = [];
            for (const pid of pids) {
              if (!(await alive(pid))) continue;
              const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
              left.push(`${pid} ${cmd.replaceAll('\0', ' ').slice(0, 120)}`);
            }
            throw new Error(`${err.message}; still running: ${left.join('; ')}`);
          },
        );
        await until('every dir removed', () => !got.dirs.some((d) => existsSync(d)), 20_000);
        // A sentinel removes its dir, then exits: it is gone a moment after the dir.
        await until(
          'every sentinel gone',
          async () => {
            for (const dir of got.dirs) if ((await sentinelsOf(dir)).length > 0) return false;
            return true;
          },
          20_000,
        );
      } finally {
        owner.kill('SIGKILL');
        await rm(work, { recursive: true, force: true });
      }
    });

    it('stands down after a normal stop, killing nothing', async () => {
      const d = await startLibvirtd();
      expect(await sentinelsOf(d.dir)).toHaveLength(1);
      await d.stop();
      await until('the sentinel gone', async () => (await sentinelsOf(d.dir)).length === 0, 5_000);
    });
  },
);
