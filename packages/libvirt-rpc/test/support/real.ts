// Helpers shared by the suites that talk to a real libvirtd.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Libvirtd } from '@proxy-op/libvirt-harness';

/** The binaries the real-daemon suites need. */
export const DAEMON_PEERS = ['libvirtd', 'virsh', 'qemu-img'];

/** A transient dir pool on qemu:///system, in the daemon's temp dir; returns its path. */
export async function createDirPool(daemon: Libvirtd, name: string): Promise<string> {
  const dir = await mkdtemp(join(daemon.dir, `${name}-`));
  await daemon.virsh('qemu:///system', ['pool-create-as', name, 'dir', '--target', dir]);
  return dir;
}

export function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

export async function readAll(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export function random(n: number): Buffer {
  return randomBytes(n);
}

export function volXml(name: string, bytes: number): string {
  return `<volume><name>${name}</name><capacity unit="bytes">${bytes}</capacity><target><format type="raw"/></target></volume>`;
}

export function domainXml(name: string): string {
  return `<domain type="test"><name>${name}</name><memory unit="MiB">64</memory><os><type>hvm</type></os><devices><interface type="network"><source network="default"/><mac address="52:54:00:aa:bb:01"/></interface></devices></domain>`;
}

/** An async source that yields `chunk` forever, noting how many times it was read. */
export function endless(chunk: Buffer, counter: { n: number }): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        counter.n++;
        yield chunk;
        await new Promise((r) => setImmediate(r));
      }
    },
  };
}

/** Runs a python3-libvirt (the C client) snippet; `conn` is open on `uri` through the daemon. */
export async function python(daemon: Libvirtd, driver: string, body: string): Promise<string> {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const script = [
    'import libvirt, json, sys',
    'libvirt.registerErrorHandler(lambda *a: None, None)',
    `conn = libvirt.open(${JSON.stringify(daemon.uri(driver))})`,
    body,
  ].join('\n');
  return (await promisify(execFile)(PYTHON, ['-c', script])).stdout;
}

/** Debian's python3, where python3-libvirt installs. */
export const PYTHON = '/usr/bin/python3';

/**
 * Whether the C-client oracle (python3-libvirt) is installed. Tests that
 * need it skip without it, except under CI=true, where it must be there.
 */
export const HAS_C_CLIENT =
  process.env.CI === 'true' ||
  (await import('node:child_process')).spawnSync(PYTHON, ['-c', 'import libvirt']).status === 0;
