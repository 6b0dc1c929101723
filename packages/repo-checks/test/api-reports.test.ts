// Peer: api-extractor (its own TypeScript) over the built declarations of every published
// package, and api-documenter. The API report check, the TSDoc check, the exports check and
// the README links, each also run on a seeded change that must fail it.
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportBlocks } from '../src/api-diff.ts';
import {
  buildApiReports,
  type EntryReport,
  reportFailures,
  UPDATE_COMMAND,
  writeApiReports,
} from '../src/api-report.ts';
import { buildApiDocs, readmeLinkProblems } from '../src/docs.ts';
import { exportsProblems } from '../src/publish.ts';
import { publishedPackages, REPO_ROOT } from '../src/workspace.ts';

const published = publishedPackages();

describe('the API reports', () => {
  let reports: EntryReport[];
  beforeAll(() => {
    reports = buildApiReports();
  });

  it('match the build for every published entry point, and every export has TSDoc', () => {
    expect(reports.length).toBeGreaterThanOrEqual(published.length);
    expect(reportFailures(reports).join('\n\n')).toBe('');
  });

  it('hold no top-level @internal or @alpha export: nothing internal is reachable', () => {
    for (const r of reports)
      for (const [key, lines] of reportBlocks(r.built))
        expect(
          lines.filter((l) => /^\/\/ @(internal|alpha)\b/.test(l)),
          `${r.entry.specifier} ${key}`,
        ).toEqual([]);
  });

  it('are the source of a reference page per entry point (api-documenter)', () => {
    const out = mkdtempSync(join(tmpdir(), 'proxy-op-docs-'));
    try {
      buildApiDocs(REPO_ROOT, out);
      for (const r of reports) {
        const page = readFileSync(
          join(out, r.entry.reportName.replace(/\.api\.md$/, '.md')),
          'utf8',
        );
        expect(page, r.entry.specifier).toMatch(/ package$/m);
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the API report check fails on a seeded change', () => {
  // A copy of keyedlock (manifest, dist, etc) in a repo of its own, sharing node_modules.
  let root: string;
  const pkgDir = () => join(root, 'packages', 'keyedlock');
  const seeded = () => buildApiReports({ root, packages: publishedPackages(root) });

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'proxy-op-api-seed-'));
    for (const part of ['package.json', 'dist', 'etc'])
      cpSync(join(REPO_ROOT, 'packages', 'keyedlock', part), join(pkgDir(), part), {
        recursive: true,
      });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('passes on the copy as it is', () => {
    expect(reportFailures(seeded(), root)).toEqual([]);
  });

  it('an added export: the report differs, and the message says how to update it', () => {
    const dts = join(pkgDir(), 'dist', 'index.d.ts');
    const original = readFileSync(dts, 'utf8');
    try {
      writeFileSync(
        dts,
        `${original}\n/** A seeded export. */\nexport declare const SEEDED = 1;\n`,
      );
      const failures = reportFailures(seeded(), root);
      expect(failures.join('\n')).toContain('@proxy-op/keyedlock: the built API differs from');
      expect(failures.join('\n')).toContain('+ export const SEEDED = 1;');
      expect(failures.at(-1)).toContain(UPDATE_COMMAND);
      // The update writes the new report, and then the check passes.
      writeApiReports(seeded(), root);
      expect(reportFailures(seeded(), root)).toEqual([]);
    } finally {
      writeFileSync(dts, original);
      writeApiReports(seeded(), root);
    }
  });

  it('an export without TSDoc fails as ae-undocumented, naming it', () => {
    const dts = join(pkgDir(), 'dist', 'index.d.ts');
    const original = readFileSync(dts, 'utf8');
    try {
      writeFileSync(dts, `${original}\nexport declare function seededUndocumented(): void;\n`);
      const failures = reportFailures(seeded(), root).join('\n');
      expect(failures).toMatch(
        /\(ae-undocumented\) Missing documentation for "seededUndocumented"/,
      );
    } finally {
      writeFileSync(dts, original);
    }
  });

  it('a missing report and a stale one fail', () => {
    const report = join(pkgDir(), 'etc', 'keyedlock.api.md');
    const original = readFileSync(report, 'utf8');
    try {
      rmSync(report);
      writeFileSync(join(pkgDir(), 'etc', 'keyedlock-gone.api.md'), original);
      const failures = reportFailures(seeded(), root).join('\n');
      expect(failures).toContain('packages/keyedlock/etc/keyedlock.api.md is missing');
      expect(failures).toContain('packages/keyedlock/etc/keyedlock-gone.api.md: no exports entry');
    } finally {
      rmSync(join(pkgDir(), 'etc', 'keyedlock-gone.api.md'), { force: true });
      writeFileSync(report, original);
    }
  });
});

describe('the exports maps', () => {
  it('name each entry point and point only into dist/', () => {
    expect(published.flatMap(exportsProblems)).toEqual([]);
  });

  it('a pattern or a source target fails', () => {
    const [pkg] = published;
    const seeded = {
      ...pkg!,
      manifest: {
        ...pkg!.manifest,
        exports: {
          ...pkg!.manifest.exports,
          './*': { types: './dist/*.d.ts', default: './dist/*.js' },
          './internal': { types: './src/internal.ts', default: './src/internal.ts' },
        },
      },
    };
    const problems = exportsProblems(seeded).join('\n');
    expect(problems).toContain('"./*" is a pattern');
    expect(problems).toContain('"./internal" points at ./src/internal.ts');
  });
});

describe('each README links its API reference and its reports', () => {
  for (const pkg of published)
    it(pkg.manifest.name, () => {
      expect(readmeLinkProblems(pkg, readFileSync(join(pkg.path, 'README.md'), 'utf8'))).toEqual(
        [],
      );
    });

  it('a README without the section fails', () => {
    const [pkg] = published;
    expect(readmeLinkProblems(pkg!, '# x\n\n## Install\n')).toEqual([
      `${pkg!.manifest.name}: README.md has no "## API reference" section`,
    ]);
  });
});
