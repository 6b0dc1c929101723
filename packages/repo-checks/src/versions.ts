// First versions and changelogs: `changeset version` run on a copy of the repo, and what it
// must give. The policy: a package's first published version is 0.1.0 (its first changesets
// are minor); it stays 0.x while the contract may change, where a breaking change is a minor
// bump; a package reaches 1.0.0 by a deliberate major changeset, once the contract and the
// package's own API are declared stable. After that, semver as changesets computes it.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Bump, bumpVersion, maxBump } from './api-diff.ts';
import type { Changeset } from './changeset-kind.ts';
import { REPO_ROOT, type WorkspacePackage } from './workspace.ts';

const exec = promisify(execFile);

/** The version every package is first published at. */
export const FIRST_VERSION = '0.1.0';

/**
 * The folders of a package that a copy for versioning and packing leaves out. Hidden entries
 * at a package's top level are left out too: they are never published, and some are scratch
 * space other suites create and remove while this copy runs (a README example's project).
 */
const NOT_COPIED = new Set(['node_modules', 'src', 'test', 'bench', 'coverage']);

/** A copy of the repo (manifests, READMEs, built output, changesets) in the temp dir. */
export interface RepoCopy {
  readonly dir: string;
  dispose(): void;
}

/** Copies what versioning and packing read; the copy shares the repo's node_modules. */
export function copyRepo(root: string = REPO_ROOT): RepoCopy {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-op-version-'));
  for (const f of ['package.json', 'package-lock.json', '.changeset'])
    cpSync(join(root, f), join(dir, f), { recursive: true });
  cpSync(join(root, 'packages'), join(dir, 'packages'), {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const parts = src.slice(join(root, 'packages').length + 1).split('/');
      return (
        !(parts.length >= 2 && (NOT_COPIED.has(parts[1] ?? '') || parts[1]?.startsWith('.'))) &&
        !parts.includes('node_modules')
      );
    },
  });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs the repo's pinned `changeset version` in `dir`. */
export async function changesetVersion(dir: string): Promise<string> {
  const bin = join(REPO_ROOT, 'node_modules', '@changesets', 'cli', 'bin.js');
  const { stdout, stderr } = await exec(process.execPath, [bin, 'version'], { cwd: dir });
  return `${stdout}${stderr}`;
}

/** The version `changeset version` must give a package: the first version, or its bump. */
export function expectedVersion(
  version: string,
  changesets: readonly Changeset[],
  name: string,
): string {
  let bump: Bump = 'none';
  for (const c of changesets) bump = maxBump(bump, c.bumps.get(name) ?? 'none');
  if (bump === 'none') return version;
  return version === '0.0.0' ? FIRST_VERSION : bumpVersion(version, bump);
}

/**
 * What is wrong with a versioned copy: a published package whose version is not the expected
 * one (`before` is the repo before versioning), a CHANGELOG.md missing, or one without the
 * new version's heading. Empty when all is well.
 */
export function versionProblems(
  before: readonly WorkspacePackage[],
  after: readonly WorkspacePackage[],
  changesets: readonly Changeset[],
): string[] {
  const out: string[] = [];
  const byName = new Map(after.map((p) => [p.manifest.name, p]));
  for (const old of before) {
    const { name, version } = old.manifest;
    const now = byName.get(name);
    if (now === undefined) {
      out.push(`${name}: missing after changeset version`);
      continue;
    }
    const want = expectedVersion(version, changesets, name);
    if (now.manifest.version !== want)
      out.push(`${name}: changeset version gave ${now.manifest.version}, the policy says ${want}`);
    if (want === version) continue;
    const changelog = join(now.path, 'CHANGELOG.md');
    if (!existsSync(changelog)) out.push(`${name}: no CHANGELOG.md`);
    else if (!readFileSync(changelog, 'utf8').includes(`\n## ${want}\n`))
      out.push(`${name}: CHANGELOG.md has no "## ${want}" section`);
  }
  return out;
}
