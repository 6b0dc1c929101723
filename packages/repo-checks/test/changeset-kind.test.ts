// Peer: git (a throwaway repository with a release tag) and the repo's committed reports and
// pending changesets. The changeset-kind check on the repo, then on seeded changes that must
// fail it, naming the package and the bump.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffReports, requiredBump } from '../src/api-diff.ts';
import { checkChangesetKinds } from '../src/changeset-kind.ts';
import { publishedPackages, REPO_ROOT } from '../src/workspace.ts';

/** A report with the given declarations, as api-extractor writes one. */
function report(...blocks: string[]): string {
  return `## API Report File for "@proxy-op/x"\n\n\`\`\`ts\n\nimport { Y } from 'y';\n\n${blocks
    .map((b) => `// @public\n${b}`)
    .join('\n\n')}\n\n// (No @packageDocumentation comment for this package)\n\n\`\`\`\n`;
}

const LOCK = 'export class Lock {\n    acquire(key: string): Promise<void>;\n}';
const OPTS = 'export interface Options {\n    readonly signal?: AbortSignal;\n}';

describe('what an API change is', () => {
  it('the same report is no change; imports and warnings are not API', () => {
    const a = report(LOCK, OPTS);
    expect(diffReports(a, a).change).toBe('none');
    expect(diffReports(a, a.replace("import { Y } from 'y';", '')).change).toBe('none');
  });

  it('a new export, a new class member or a new optional member is an addition', () => {
    expect(diffReports(report(LOCK), report(LOCK, OPTS))).toMatchObject({
      change: 'additive',
      added: ['interface Options'],
    });
    const more = LOCK.replace('}', '    release(): void;\n}');
    expect(diffReports(report(LOCK), report(more))).toMatchObject({
      change: 'additive',
      extended: ['class Lock'],
    });
    const optional = OPTS.replace('}', '    readonly timeoutMs?: number;\n}');
    expect(diffReports(report(OPTS), report(optional)).change).toBe('additive');
  });

  it('a removal, a changed signature or a new required interface member is breaking', () => {
    expect(diffReports(report(LOCK, OPTS), report(LOCK))).toMatchObject({
      change: 'breaking',
      removed: ['interface Options'],
    });
    const changed = LOCK.replace('key: string', 'key: number');
    expect(diffReports(report(LOCK), report(changed))).toMatchObject({
      change: 'breaking',
      changed: ['class Lock'],
    });
    const required = OPTS.replace('}', '    readonly timeoutMs: number;\n}');
    expect(diffReports(report(OPTS), report(required)).change).toBe('breaking');
  });

  it('the bump: breaking is major from 1.0.0 and minor before, an addition minor', () => {
    expect(requiredBump('breaking', '1.2.3')).toBe('major');
    expect(requiredBump('breaking', '0.4.0')).toBe('minor');
    expect(requiredBump('additive', '2.0.0')).toBe('minor');
    expect(requiredBump('none', '2.0.0')).toBe('none');
  });
});

describe('the changeset-kind check', () => {
  it('passes on the repo: every API change since the last release has its changeset', () => {
    const results = checkChangesetKinds();
    expect(results.map((r) => r.name).sort()).toEqual(
      publishedPackages()
        .map((p) => p.manifest.name)
        .sort(),
    );
    expect(results.flatMap((r) => (r.failure === undefined ? [] : [r.failure]))).toEqual([]);
  });
});

describe('the changeset-kind check fails on a seeded change', () => {
  // A repository holding one package, released as 1.2.0 (the tag `changeset git-tag` makes).
  let root: string;
  const name = '@proxy-op/keyedlock';
  const etc = () => join(root, 'packages', 'keyedlock', 'etc', 'keyedlock.api.md');
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: root, stdio: 'pipe', encoding: 'utf8' });
  const changeset = (bump: string) =>
    writeFileSync(
      join(root, '.changeset', 'seeded.md'),
      `---\n"${name}": ${bump}\n---\n\nSeeded.\n`,
    );
  const check = () => checkChangesetKinds({ root, packages: publishedPackages(root) })[0]!;
  let released: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'proxy-op-kind-seed-'));
    const pkg = join(root, 'packages', 'keyedlock');
    mkdirSync(join(pkg, 'etc'), { recursive: true });
    mkdirSync(join(root, '.changeset'));
    const manifest = JSON.parse(
      readFileSync(join(REPO_ROOT, 'packages', 'keyedlock', 'package.json'), 'utf8'),
    ) as Record<string, unknown>;
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ ...manifest, version: '1.2.0' }));
    released = readFileSync(
      join(REPO_ROOT, 'packages', 'keyedlock', 'etc', 'keyedlock.api.md'),
      'utf8',
    );
    writeFileSync(etc(), released);
    git('init', '-q');
    git('add', '-A');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'release');
    git('tag', `${name}@1.2.0`);
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  const reset = () => {
    writeFileSync(etc(), released);
    rmSync(join(root, '.changeset', 'seeded.md'), { force: true });
  };

  it('no change since the tag needs nothing', () => {
    reset();
    expect(check()).toMatchObject({
      baseline: `${name}@1.2.0`,
      change: 'none',
      failure: undefined,
    });
  });

  it('a removed method with no changeset, or a minor one, fails asking for major', () => {
    reset();
    writeFileSync(etc(), released.replace(/^ {4}isLocked\(.*\n/m, ''));
    expect(check().failure).toMatch(
      /^@proxy-op\/keyedlock: the API changed since @proxy-op\/keyedlock@1\.2\.0 \(changed class KeyedLock\): it needs a major changeset, and the pending changesets give none\./,
    );
    changeset('minor');
    expect(check().failure).toContain(
      'needs a major changeset, and the pending changesets give minor',
    );
    expect(check().failure).toContain(`choose major for ${name}`);
    changeset('major');
    expect(check().failure).toBeUndefined();
  });

  it('an added export with a patch changeset fails asking for minor', () => {
    reset();
    writeFileSync(
      etc(),
      released.replace('// @public\n', '// @public\nexport const SEEDED = 1;\n\n// @public\n'),
    );
    changeset('patch');
    expect(check()).toMatchObject({ change: 'additive', required: 'minor', declared: 'patch' });
    expect(check().failure).toContain('(added const SEEDED): it needs a minor changeset');
    changeset('minor');
    expect(check().failure).toBeUndefined();
  });

  it('in the version pull request the bumped version counts as the declared bump', () => {
    reset();
    writeFileSync(etc(), released.replace(/^ {4}isLocked\(.*\n/m, ''));
    const manifest = join(root, 'packages', 'keyedlock', 'package.json');
    const text = readFileSync(manifest, 'utf8');
    try {
      writeFileSync(manifest, text.replace('"version":"1.2.0"', '"version":"1.3.0"'));
      expect(check().failure).toContain('the pending changesets give minor');
      writeFileSync(manifest, text.replace('"version":"1.2.0"', '"version":"2.0.0"'));
      expect(check()).toMatchObject({
        baseline: `${name}@1.2.0`,
        declared: 'major',
        failure: undefined,
      });
    } finally {
      writeFileSync(manifest, text);
    }
  });
});
