// Peer: npm (pack and install into a project in the temp dir) and the repo's own files.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type PackedProject, packIntoProject, parseReadmeExamples } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const self = JSON.parse(readFileSync(join(root, 'packages/repo-checks/package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};

interface Manifest {
  name: string;
  private?: boolean;
  type?: string;
  sideEffects?: boolean;
  exports?: Record<string, string | Record<string, string>>;
  files?: string[];
  engines?: Record<string, string>;
  repository?: { directory?: string };
  publishConfig?: { access?: string };
  license?: string;
}

const packages = readdirSync(join(root, 'packages'))
  .filter((d) => existsSync(join(root, 'packages', d, 'package.json')))
  .map((dir) => ({
    dir,
    manifest: JSON.parse(
      readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8'),
    ) as Manifest,
  }));
const published = packages.filter((p) => p.manifest.private !== true);

describe('published packages', () => {
  it('are all known to this package (so turbo builds them first)', () => {
    expect(published.length).toBeGreaterThan(0);
    for (const p of published)
      expect(Object.keys(self.devDependencies), p.manifest.name).toContain(p.manifest.name);
  });

  const tsconfig = readFileSync(join(root, 'tsconfig.json'), 'utf8');
  const changes = existsSync(join(root, '.changeset'))
    ? readdirSync(join(root, '.changeset'))
        .filter((f) => f.endsWith('.md') && f !== 'README.md')
        .map((f) => readFileSync(join(root, '.changeset', f), 'utf8'))
        .join('\n')
    : '';

  for (const { dir, manifest: m } of published) {
    it(`${m.name} follows the manifest conventions`, () => {
      expect(m.name).toBe(`@proxy-op/${dir}`);
      expect(m.type).toBe('module');
      expect(m.sideEffects).toBe(false);
      expect(m.license).toBe('Apache-2.0');
      expect(m.engines?.node).toBe('^22.12.0 || ^24.0.0 || >=26.0.0');
      expect(m.repository?.directory).toBe(`packages/${dir}`);
      expect(m.publishConfig?.access).toBe('public');
      expect(m.files).toContain('dist');
      expect(m.exports?.['./package.json']).toBe('./package.json');
      for (const [key, target] of Object.entries(m.exports ?? {})) {
        if (key === './package.json') continue;
        expect(typeof target, key).toBe('object');
        expect(Object.keys(target as object)[0], `${key}: types first`).toBe('types');
      }
    });

    it(`${m.name} has a tested README example, a tsconfig reference and a changeset`, () => {
      const readme = readFileSync(join(root, 'packages', dir, 'README.md'), 'utf8');
      expect(readme).toMatch(/^```ts example$/m);
      expect(existsSync(join(root, 'packages', dir, 'test', 'readme.test.ts'))).toBe(true);
      expect(tsconfig).toContain(`"packages/${dir}"`);
      const hasChangelog = existsSync(join(root, 'packages', dir, 'CHANGELOG.md'));
      expect(hasChangelog || changes.includes(`"${m.name}"`), 'a changeset or a changelog').toBe(
        true,
      );
    });
  }
});

// Every README example, as a user would paste it into their project: type-checked there.
const examples = Object.fromEntries(
  published.flatMap(({ dir }) =>
    parseReadmeExamples(readFileSync(join(root, 'packages', dir, 'README.md'), 'utf8')).map(
      (ex, i) => [`readme-${dir}-${i + 1}.ts`, `${ex.source}\nexport {};\n`],
    ),
  ),
);

describe('packed into a project outside the repo', () => {
  let project: PackedProject;
  const entries = published.flatMap(({ manifest: m }) =>
    Object.keys(m.exports ?? {})
      .filter((k) => k !== './package.json')
      .map((k) => (k === '.' ? m.name : `${m.name}/${k.slice(2)}`)),
  );

  beforeAll(async () => {
    project = await packIntoProject({
      timeoutMs: 840_000,
      packageDirs: published.map((p) => join(root, 'packages', p.dir)),
      dependencies: {
        '@opentelemetry/api': '1.10.0',
        '@types/node': '24.19.4',
        vitest: '5.1.2',
        vite: '8.3.8',
        ssh2: '1.17.0',
      },
      files: {
        'imports.mjs': [
          ...entries.map((e, i) => `import * as m${i} from '${e}';`),
          `console.log(JSON.stringify([${entries.map((_, i) => `Object.keys(m${i}).length`).join(', ')}]));`,
        ].join('\n'),
        'types.ts': entries.map((e, i) => `export * as m${i} from '${e}';`).join('\n'),
        ...examples,
        'tsconfig.json': JSON.stringify({
          compilerOptions: {
            target: 'es2023',
            module: 'nodenext',
            moduleResolution: 'nodenext',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node'],
            lib: ['es2023', 'dom', 'esnext.disposable'],
          },
          files: ['types.ts', ...Object.keys(examples)],
        }),
      },
    });
  }, 900_000); // a dozen tarballs and their registry dependencies: minutes on a loaded machine

  afterAll(async () => {
    await project?.dispose();
  });

  // The one example a package ships on purpose: the kit's README points a provider author at it.
  const SHIPPED_EXAMPLES: Readonly<Record<string, RegExp>> = {
    '@proxy-op/providertest': /^package\/examples\/outside-project\/[\w.-]+$/,
  };

  it('each tarball holds dist and the README, and no sources, tests or build info', async () => {
    for (const [name, tarball] of project.tarballs) {
      const { stdout } = await project.run('tar', ['-tzf', tarball]);
      const files = stdout.trim().split('\n');
      expect(files, name).toContain('package/README.md');
      expect(files, name).toContain('package/dist/index.js');
      expect(files, name).toContain('package/dist/index.d.ts');
      expect(
        files.filter(
          (f) =>
            /\/(src|test|bench|examples)\/|\.tsbuildinfo$|\.test\.|readme-example/.test(f) &&
            !SHIPPED_EXAMPLES[name]?.test(f),
        ),
        name,
      ).toEqual([]);
    }
  });

  it('every exports entry imports with Node', async () => {
    const { stdout } = await project.run(process.execPath, ['imports.mjs']);
    const counts = JSON.parse(stdout) as number[];
    expect(counts).toHaveLength(entries.length);
    for (const [i, n] of counts.entries()) expect(n, entries[i]).toBeGreaterThan(0);
  });

  it('every exports entry, and every README example, type-checks with the declarations', async () => {
    expect(Object.keys(examples).length).toBeGreaterThanOrEqual(published.length);
    const tsc = join(root, 'node_modules/.bin/tsc');
    await expect(project.run(tsc, ['-p', 'tsconfig.json'])).resolves.toBeDefined();
  }, 120_000);
});
