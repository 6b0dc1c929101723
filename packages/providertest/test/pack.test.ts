// Peer: npm itself. Packs exactly what the kit needs of this repo: contract, keyedlock, egress
// (contract's own dependency), htpasswd and providertest; forward-proxy is not among them. Installs
// the tarballs into a project in the temp dir (dependencies from the registry or npm's cache), takes
// the example provider from the installed package (so the tarball must ship it), type-checks it,
// runs the conformance suite there against it, and then against the same provider with defects
// seeded one at a time (test/fixtures/outside-defects.ts), each of which must be caught.
import { copyFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type PackedProject, packIntoProject, runProcess } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const repoTsc = here('../../../node_modules/.bin/tsc');

let project: PackedProject;
let shipped: string[] = [];

beforeAll(async () => {
  project = await packIntoProject({
    packageDirs: [
      here('../../contract'),
      here('../../keyedlock'),
      here('../../egress'),
      here('../../htpasswd'),
      here('..'),
    ],
    dependencies: {
      vitest: '5.1.2',
      vite: '8.3.8',
      '@opentelemetry/api': '1.10.0',
      '@types/node': '24.19.4',
    },
    files: {
      'defects.test.ts': await readFile(here('fixtures/outside-defects.ts'), 'utf8'),
    },
  });
  const examples = join(
    project.dir,
    'node_modules/@proxy-op/providertest/examples/outside-project',
  );
  shipped = await readdir(examples);
  for (const f of shipped) await copyFile(join(examples, f), join(project.dir, f));
}, 300_000);

afterAll(async () => {
  await project?.dispose();
});

describe('packed packages in a project outside the repo', () => {
  it('are all the kit needs of this repo: no other @proxy-op package is installed', async () => {
    const installed = await readdir(join(project.dir, 'node_modules/@proxy-op'));
    expect(installed.sort()).toEqual([
      'contract',
      'egress',
      'htpasswd',
      'keyedlock',
      'providertest',
    ]);
  });

  it('ship the README example provider, harness and test', () => {
    expect(shipped.sort()).toEqual([
      'acme-api.ts',
      'conformance.test.ts',
      'provider.ts',
      'tsconfig.json',
    ]);
  });

  it('type-check a provider written against them', async () => {
    await expect(project.run(repoTsc, ['-p', 'tsconfig.json'])).resolves.toBeDefined();
  }, 120_000);

  it('run the conformance suite against the outside provider', async () => {
    const { stdout } = await project.run(
      'npx',
      ['vitest', 'run', 'conformance.test.ts', '--reporter=dot'],
      { env: { CI: 'true', NO_COLOR: '1' }, timeoutMs: 240_000 },
    );
    expect(stdout).toMatch(/Tests\s+\d+ passed/);
    expect(stdout).not.toMatch(/failed/);
  }, 300_000);

  it('catch every defect seeded into the outside provider, on the test aimed at it', async () => {
    const run = await runProcess(
      'npx',
      ['vitest', 'run', 'defects.test.ts', '--reporter=json', '--outputFile=defects.json'],
      { cwd: project.dir, env: { CI: 'true', NO_COLOR: '1' }, timeoutMs: 240_000 },
    );
    expect(run.code, run.stderr).not.toBe(0);
    const report = JSON.parse(await readFile(join(project.dir, 'defects.json'), 'utf8')) as {
      testResults: {
        assertionResults: { ancestorTitles: string[]; title: string; status: string }[];
      }[];
    };
    const results = report.testResults.flatMap((f) => f.assertionResults);
    const source = await readFile(here('fixtures/outside-defects.ts'), 'utf8');
    const defects = [...source.matchAll(/^ {2}'([a-z0-9-]+)': \{$/gm)].map((m) => m[1]);
    expect(defects.length).toBeGreaterThanOrEqual(8);
    for (const defect of defects) {
      const mine = results.filter((r) => r.ancestorTitles[0] === defect);
      expect(mine, defect).toHaveLength(1);
      expect(mine[0]?.status, `${defect}: ${mine[0]?.title}`).toBe('failed');
    }
  }, 300_000);
});
