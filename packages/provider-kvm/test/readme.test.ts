// Peer: the built package run from a child Node process as a user would, against the real stack (a private libvirtd and sshd on loopback, the test guest image over HTTP).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  type LibvirtStack,
  STACK_PEERS,
  startLibvirtStack,
  TEST_GUEST_PEERS,
} from '@proxy-op/libvirt-harness';
import {
  describeWithPeers,
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';

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

describeWithPeers(
  vitest,
  'README examples against the real stack',
  [...STACK_PEERS, ...TEST_GUEST_PEERS],
  () => {
    let stack: LibvirtStack;
    beforeAll(async () => {
      stack = await startLibvirtStack();
    }, 300_000);
    afterAll(async () => {
      await stack?.stop();
    });
    for (const ex of examples) {
      it(`runs: ${ex.heading}`, { timeout: 120_000 }, async () => {
        const host = (stack.config().hosts as Record<string, string | number>[])[0] ?? {};
        const { stdout } = await runReadmeExample(pkgDir, ex, {
          timeoutMs: 110_000,
          env: {
            KVM_ADDRESS: String(host.address),
            KVM_PORT: String(host.port),
            KVM_USER: String(host.user),
            KVM_SOCKET: String(host.socket),
            KVM_POOL: String(host.pool),
            KVM_KEY_FILE: stack.keyFile,
            KVM_KNOWN_HOSTS: stack.knownHostsFile,
            KVM_IMAGE_URL: stack.images.url(stack.imagePath),
            KVM_IMAGE_SHA256: stack.imageSha,
          },
        });
        expect(stdout.trimEnd().split('\n')).toEqual(ex.expected);
        expect(await stack.domains()).toEqual([]);
      });
    }
  },
);
