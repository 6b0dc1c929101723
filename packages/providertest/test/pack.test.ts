// Peer: npm itself. Packs contract, keyedlock and providertest, installs the tarballs into a
// project in the temp dir (dependencies from the registry or npm's cache), type-checks it,
// and runs the conformance suite there against the project's own provider.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type PackedProject, packIntoProject } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const example = (f: string) => readFile(here(`../examples/outside-project/${f}`), 'utf8');
const repoTsc = here('../../../node_modules/.bin/tsc');

let project: PackedProject;

beforeAll(async () => {
  project = await packIntoProject({
    packageDirs: [here('../../contract'), here('../../keyedlock'), here('..')],
    dependencies: { vitest: '5.1.2', vite: '8.3.8', '@opentelemetry/api': '1.10.0' },
    files: {
      'provider.ts': await example('provider.ts'),
      'conformance.test.ts': await example('conformance.test.ts'),
      'tsconfig.json': await example('tsconfig.json'),
    },
  });
}, 300_000);

afterAll(async () => {
  await project?.dispose();
});

describe('packed packages in a project outside the repo', () => {
  it('type-check a provider written against them', async () => {
    await expect(project.run(repoTsc, ['-p', 'tsconfig.json'])).resolves.toBeDefined();
  }, 120_000);

  it('run the conformance suite against the outside provider', async () => {
    const { stdout } = await project.run('npx', ['vitest', 'run', '--reporter=dot'], {
      env: { CI: 'true', NO_COLOR: '1' },
      timeoutMs: 240_000,
    });
    expect(stdout).toMatch(/Tests\s+\d+ passed/);
    expect(stdout).not.toMatch(/failed/);
  }, 300_000);
});
