// Peer: npm (pack, publish --dry-run offline against an unreachable registry), the pinned
// `changeset version` on a copy of the repo, and the release workflow's YAML. First versions
// and changelogs, tarball contents, publishing in dependency order and the workflow, each also
// on a seeded change that must fail its check.
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pendingChangesets } from '../src/changeset-kind.ts';
import {
  filesMismatch,
  type PackInfo,
  pack,
  privateDependencies,
  publishAll,
} from '../src/publish.ts';
import {
  changesetVersion,
  copyRepo,
  FIRST_VERSION,
  type RepoCopy,
  versionProblems,
} from '../src/versions.ts';
import { WORKFLOW, workflowProblems } from '../src/workflow.ts';
import {
  dependencyOrder,
  publishedPackages,
  REPO_ROOT,
  runtimeDependencies,
  type WorkspacePackage,
  workspacePackages,
} from '../src/workspace.ts';

const published = publishedPackages();

describe('dependencies', () => {
  it('no published package depends on a private one', () => {
    expect(privateDependencies(workspacePackages())).toEqual([]);
  });

  it('a published package depending on a private one fails', () => {
    const all = workspacePackages();
    const seeded = all.map((p) =>
      p.dir === 'keyedlock'
        ? { ...p, manifest: { ...p.manifest, dependencies: { '@proxy-op/testkit': '0.0.0' } } }
        : p,
    );
    expect(privateDependencies(seeded)).toEqual([
      '@proxy-op/keyedlock: dependencies names the private package @proxy-op/testkit',
    ]);
  });

  it('the publish order puts every package after the packages it depends on', () => {
    const order = dependencyOrder(published).map((p) => p.manifest.name);
    expect(order).toHaveLength(published.length);
    for (const p of published)
      for (const d of runtimeDependencies(p.manifest))
        if (order.includes(d.name))
          expect(order.indexOf(d.name), `${d.name} before ${p.manifest.name}`).toBeLessThan(
            order.indexOf(p.manifest.name),
          );
  });

  it('a dependency cycle is refused', () => {
    const cycle = (name: string, dep: string): WorkspacePackage => ({
      dir: name,
      path: `/${name}`,
      manifest: { name, version: '0.0.0', dependencies: { [dep]: '0.0.0' } },
    });
    expect(() => dependencyOrder([cycle('a', 'b'), cycle('b', 'a')])).toThrow(/dependency cycle/);
  });
});

describe('first versions and changelogs: changeset version on a copy of the repo', () => {
  let copy: RepoCopy;
  let packed: PackInfo[];
  const changesets = pendingChangesets();

  beforeAll(async () => {
    copy = copyRepo();
    await changesetVersion(copy.dir);
    packed = await pack(publishedPackages(copy.dir), undefined, copy.dir);
  }, 120_000);
  afterAll(() => copy?.dispose());

  it(`gives each package its policy version (first releases ${FIRST_VERSION}) and a CHANGELOG.md`, () => {
    expect(versionProblems(published, publishedPackages(copy.dir), changesets)).toEqual([]);
    const versions = Object.fromEntries(
      publishedPackages(copy.dir).map((p) => [p.manifest.name, p.manifest.version]),
    );
    console.log(`versions after changeset version: ${JSON.stringify(versions, null, 2)}`);
  });

  it('updates the pinned versions of workspace dependencies', () => {
    const after = new Map(
      publishedPackages(copy.dir).map((p) => [p.manifest.name, p.manifest.version]),
    );
    for (const p of publishedPackages(copy.dir))
      for (const [dep, range] of Object.entries(p.manifest.dependencies ?? {}))
        if (after.has(dep)) expect(range, `${p.manifest.name} -> ${dep}`).toBe(after.get(dep));
  });

  it('packed tarballs carry the new version and the CHANGELOG.md', () => {
    const after = new Map(
      publishedPackages(copy.dir).map((p) => [p.manifest.name, p.manifest.version]),
    );
    expect(packed.map((p) => p.name).sort()).toEqual([...after.keys()].sort());
    for (const info of packed) {
      expect(info.version, info.name).toBe(after.get(info.name));
      expect(
        info.files.map((f) => f.path),
        info.name,
      ).toContain('CHANGELOG.md');
    }
  });

  it('npm pack contents match each package\'s "files"', () => {
    const byName = new Map(publishedPackages(copy.dir).map((p) => [p.manifest.name, p.manifest]));
    expect(
      packed.flatMap((info) =>
        filesMismatch(
          byName.get(info.name)!,
          info.files.map((f) => f.path),
        ),
      ),
    ).toEqual([]);
  });

  it('a "files" entry that packs nothing, a stray file or an unpacked bin fails', () => {
    const info = packed.find((p) => p.name === '@proxy-op/operator')!;
    const manifest = publishedPackages(copy.dir).find((p) => p.dir === 'operator')!.manifest;
    const files = info.files.map((f) => f.path).filter((f) => !f.startsWith('bin/'));
    expect(
      filesMismatch({ ...manifest, files: [...(manifest.files ?? []), 'LICENSES'] }, [
        ...files,
        'notes.txt',
      ]),
    ).toEqual([
      '@proxy-op/operator: notes.txt is packed but not named by "files"',
      '@proxy-op/operator: "files" names bin, which packs nothing',
      '@proxy-op/operator: "files" names LICENSES, which packs nothing',
      '@proxy-op/operator: bin/proxy-op.js is a target but not packed',
    ]);
  });

  it("a first version other than the policy's fails the version check", async () => {
    const seeded = copyRepo();
    try {
      writeFileSync(
        join(seeded.dir, '.changeset', 'seeded-major.md'),
        '---\n"@proxy-op/keyedlock": major\n---\n\nSeeded.\n',
      );
      await changesetVersion(seeded.dir);
      expect(versionProblems(published, publishedPackages(seeded.dir), changesets)).toContain(
        `@proxy-op/keyedlock: changeset version gave 1.0.0, the policy says ${FIRST_VERSION}`,
      );
    } finally {
      seeded.dispose();
    }
  }, 60_000);
});

describe('the copy of the repo', () => {
  it("leaves out a package's hidden scratch folders, which other suites remove while it runs", () => {
    const root = mkdtempSync(join(tmpdir(), 'proxy-op-copy-seed-'));
    try {
      for (const f of ['package.json', 'package-lock.json']) writeFileSync(join(root, f), '{}');
      mkdirSync(join(root, '.changeset'));
      mkdirSync(join(root, 'node_modules'));
      const pkg = join(root, 'packages', 'p');
      mkdirSync(join(pkg, '.readme-example-x', 'sub'), { recursive: true });
      mkdirSync(join(pkg, 'dist'), { recursive: true });
      writeFileSync(join(pkg, 'package.json'), '{}');
      writeFileSync(join(pkg, 'dist', 'index.js'), '');
      const copy = copyRepo(root);
      try {
        expect(readdirSync(join(copy.dir, 'packages', 'p')).sort()).toEqual([
          'dist',
          'package.json',
        ]);
      } finally {
        copy.dispose();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('the publish dry run', () => {
  // A hang detector, not a speed claim: one npm pack and one npm publish --dry-run per package,
  // one after another, as the release runs them: 129 s in a CI run beside the rest of npm test
  // on 2 cores, past 180 s in one that ran more suites at once.
  it('publishes every package from its packed tarball, in dependency order, touching no registry', async () => {
    const results = await publishAll({ dryRun: true });
    expect(results.map((r) => r.name)).toEqual(
      dependencyOrder(published).map((p) => p.manifest.name),
    );
    for (const r of results) {
      expect(r.outcome).toBe('dry-run');
      expect(r.output, r.name).toContain(`+ ${r.name}@${r.version}`);
      expect(r.output, r.name).toMatch(/with tag latest and public access \(dry-run\)/);
    }
  }, 600_000);

  it('fails on a package npm refuses to pack or publish (an invalid version)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'proxy-op-publish-seed-'));
    try {
      const dir = join(root, 'packages', 'keyedlock');
      for (const part of ['package.json', 'dist', 'README.md'])
        cpSync(join(REPO_ROOT, 'packages', 'keyedlock', part), join(dir, part), {
          recursive: true,
        });
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as object;
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...manifest, version: '1.0' }));
      const packages = workspacePackages(root);
      await expect(publishAll({ dryRun: true, root, packages })).rejects.toThrow(/version/i);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the release workflow', () => {
  const rootManifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
  const text = readFileSync(join(REPO_ROOT, WORKFLOW), 'utf8');

  it('parses and has the release job the repository and its scripts need', () => {
    expect(workflowProblems(text, rootManifest)).toEqual([]);
  });

  it('fails when it does not parse, lacks the release job, or publishes another way', () => {
    expect(workflowProblems('jobs: [unclosed', rootManifest)[0]).toMatch(/does not parse/);
    expect(workflowProblems(text.replace('  release:\n', '  ship:\n'), rootManifest)).toContain(
      `${WORKFLOW} has no release job`,
    );
    expect(
      workflowProblems(text.replace('id-token: write # npm', 'id-token: none # npm'), rootManifest),
    ).toContain('the release job needs permissions id-token: write');
    expect(
      workflowProblems(
        text.replace('publish-script: npm run release', 'publish-script: npx changeset publish'),
        rootManifest,
      ),
    ).toContain('the changesets step must publish with `npm run release`');
    expect(
      workflowProblems(text, {
        ...rootManifest,
        scripts: { ...rootManifest.scripts, release: 'changeset publish' },
      }),
    ).toContain(
      'the root script release must publish with the repo-checks CLI, then `changeset git-tag`',
    );
  });
});
