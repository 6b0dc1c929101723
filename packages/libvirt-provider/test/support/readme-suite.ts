// The README test of a provider on the engine: the profile table says what the exported profile
// does, and the README's examples run from a child Node process as a user would, against the
// real stack (a private libvirtd and sshd on loopback, the test guest image over HTTP), with the
// host's coordinates in `<PREFIX>_*` variables.
import { readFile } from 'node:fs/promises';
import { PROFILE_AXES, type Profile } from '@proxy-op/contract';
import {
  type LibvirtStack,
  STACK_PEERS,
  startLibvirtStack,
  TEST_GUEST_PEERS,
} from '@proxy-op/libvirt-harness';
import {
  describeWithPeers,
  profileTableProblems,
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from '@proxy-op/testkit';
import type * as Vitest from 'vitest';

/**
 * Registers the README tests of the package in `pkgDir`, whose exported profile is `profile`;
 * its examples read `<envPrefix>_ADDRESS` and the rest.
 */
export async function describeReadmeOnStack(
  vitest: typeof Vitest,
  pkgDir: string,
  envPrefix: string,
  profile: Profile,
): Promise<void> {
  const { afterAll, beforeAll, expect, it } = vitest;
  const examples = await readmeExamples(`${pkgDir}/README.md`);
  const quoted = await readmeFileBlocks(`${pkgDir}/README.md`);

  vitest.describe('README', () => {
    it('has at least one runnable example', () => {
      expect(examples.length).toBeGreaterThan(0);
    });
    it('has a profile table row for every axis, giving the exported choice', async () => {
      const readme = await readFile(`${pkgDir}/README.md`, 'utf8');
      expect(profileTableProblems(readme, profile, PROFILE_AXES)).toEqual([]);
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
              [`${envPrefix}_ADDRESS`]: String(host.address),
              [`${envPrefix}_PORT`]: String(host.port),
              [`${envPrefix}_USER`]: String(host.user),
              [`${envPrefix}_SOCKET`]: String(host.socket),
              [`${envPrefix}_POOL`]: String(host.pool),
              [`${envPrefix}_KEY_FILE`]: stack.keyFile,
              [`${envPrefix}_KNOWN_HOSTS`]: stack.knownHostsFile,
              [`${envPrefix}_IMAGE_URL`]: stack.images.url(stack.imagePath),
              [`${envPrefix}_IMAGE_SHA256`]: stack.imageSha,
            },
          });
          expect(stdout.trimEnd().split('\n')).toEqual(ex.expected);
          expect(await stack.domains()).toEqual([]);
        });
      }
    },
  );
}
