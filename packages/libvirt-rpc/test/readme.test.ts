// Peer: the built package run from a child Node process as a user would, against a real libvirtd (Debian libvirt-daemon).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Libvirtd, startLibvirtd } from '@proxy-op/libvirt-harness';
import {
  describeWithPeers,
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { DAEMON_PEERS } from './support/real.js';

const { afterAll, beforeAll, expect, it } = vitest;
const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const examples = await readmeExamples(`${pkgDir}/README.md`);
const quoted = await readmeFileBlocks(`${pkgDir}/README.md`);

vitest.describe('README', () => {
  it('has at least one runnable example', () => {
    expect(examples.length).toBeGreaterThan(0);
  });
  for (const block of quoted) {
    it(`quotes ${block.path} as it is`, async () => {
      expect(block.source).toBe(await readFile(`${pkgDir}/${block.path}`, 'utf8'));
    });
  }
});

describeWithPeers(vitest, 'README examples against a real libvirtd', DAEMON_PEERS, () => {
  let daemon: Libvirtd;
  beforeAll(async () => {
    daemon = await startLibvirtd();
  });
  afterAll(async () => {
    await daemon?.stop();
  });
  for (const ex of examples) {
    it(`runs: ${ex.heading}`, async () => {
      const { stdout } = await runReadmeExample(pkgDir, ex, {
        env: { LIBVIRT_SOCKET: daemon.socket },
      });
      expect(stdout.trimEnd().split('\n')).toEqual(ex.expected);
    });
  }
});
