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
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from '@proxy-op/testkit';
import type * as Vitest from 'vitest';

/** The rows of the README's profile table (`| axis | <flavour> |`): each axis's cell. */
function profileRows(readme: string): Map<string, string> {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => /^\| axis \|/.test(l));
  const rows = new Map<string, string>();
  for (const line of lines.slice(start + 2)) {
    if (start < 0 || !line.startsWith('|')) break;
    const [, axis = '', cell = ''] = line.split('|').map((c) => c.trim());
    rows.set(axis, cell);
  }
  return rows;
}

/** How a profile table cell starts for a choice: `choice` in backticks, `none` for no asyncOps. */
function cellStart(choice: unknown): string {
  if (Array.isArray(choice)) return choice.length === 0 ? 'none' : `\`${choice.join('`, `')}\``;
  return `\`${String(choice)}\``;
}

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
      const rows = profileRows(await readFile(`${pkgDir}/README.md`, 'utf8'));
      for (const axis of PROFILE_AXES) {
        expect(profile[axis], `profile.${axis} is declared`).toBeDefined();
        const start = cellStart(profile[axis]);
        expect(rows.get(axis)?.slice(0, start.length), `the row of ${axis}`).toBe(start);
      }
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
