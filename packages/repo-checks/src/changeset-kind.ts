// The changeset-kind check. A package's API change is measured from its last release: the
// reports as committed at the git tag `<name>@<version>` that `changeset git-tag` creates on
// publishing, the highest tagged version not above package.json's. A package never released
// (no tag) is compared with nothing, so its whole API is an addition. The bump the next release
// will make is the largest of the pending changesets for the package and, when package.json is
// already past the tag (the version PR), the bump between the two. It must be at least the bump
// the API change needs (`requiredBump`); a larger one is the author's call, as behaviour that
// no report shows (a CLI flag, a default) may need it.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import {
  type ApiChange,
  type Bump,
  bumpBetween,
  compareVersions,
  diffReports,
  maxBump,
  type ReportDiff,
  requiredBump,
  worstChange,
} from './api-diff.ts';
import { entryPoints, publishedPackages, REPO_ROOT, type WorkspacePackage } from './workspace.ts';

/** A pending changeset: its file and the bump it gives each package it names. */
export interface Changeset {
  readonly file: string;
  readonly bumps: ReadonlyMap<string, Bump>;
}

/** Reads the pending changesets in `<root>/.changeset` (every `.md` but the README). */
export function pendingChangesets(root: string = REPO_ROOT): Changeset[] {
  const dir = join(root, '.changeset');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .sort()
    .map((f) => {
      const text = readFileSync(join(dir, f), 'utf8');
      const m = /^---\n([\s\S]*?)\n?---/.exec(text);
      const front = (m === null ? {} : (parse(m[1] ?? '') ?? {})) as Record<string, unknown>;
      const bumps = new Map<string, Bump>();
      for (const [name, kind] of Object.entries(front)) {
        if (kind !== 'patch' && kind !== 'minor' && kind !== 'major' && kind !== 'none')
          throw new Error(`.changeset/${f}: "${name}" has bump ${String(kind)}`);
        bumps.set(name, kind);
      }
      return { file: `.changeset/${f}`, bumps };
    });
}

/** Where a package's API change is measured from. */
export interface Baseline {
  /** The tag, or undefined for a package never released. */
  readonly tag: string | undefined;
  /** The released version (0.0.0 when never released). */
  readonly version: string;
  /** The reports at the tag, by report file name. */
  readonly reports: ReadonlyMap<string, string>;
}

function git(root: string, args: readonly string[]): string {
  return execFileSync('git', args, {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** The baseline of a package: its highest release tag not above package.json's version. */
export function baselineOf(pkg: WorkspacePackage, root: string = REPO_ROOT): Baseline {
  const name = pkg.manifest.name;
  const tags = git(root, ['tag', '--list', `${name}@*`])
    .split('\n')
    .map((t) => t.trim())
    .filter((t) => /@\d+\.\d+\.\d+$/.test(t))
    .map((tag) => ({ tag, version: tag.slice(name.length + 1) }))
    .filter((t) => compareVersions(t.version, pkg.manifest.version) <= 0)
    .sort((a, b) => compareVersions(b.version, a.version));
  const last = tags[0];
  if (last === undefined) return { tag: undefined, version: '0.0.0', reports: new Map() };
  const dir = relative(root, pkg.path);
  const reports = new Map<string, string>();
  const listed = git(root, ['ls-tree', '--name-only', `${last.tag}:${dir}/etc`]).split('\n');
  for (const file of listed.filter((f) => f.endsWith('.api.md')))
    reports.set(file, git(root, ['show', `${last.tag}:${dir}/etc/${file}`]));
  return { tag: last.tag, version: last.version, reports };
}

/** What the check found for one package. */
export interface KindResult {
  readonly name: string;
  readonly version: string;
  readonly baseline: string;
  readonly change: ApiChange;
  readonly diffs: ReadonlyMap<string, ReportDiff>;
  readonly required: Bump;
  readonly declared: Bump;
  /** The failure, naming the package and the bump; undefined when the bump is enough. */
  readonly failure: string | undefined;
}

/** Inputs of the check, each read from the repo by default. */
export interface KindOptions {
  readonly root?: string;
  readonly packages?: readonly WorkspacePackage[];
  readonly changesets?: readonly Changeset[];
  /** The current reports by package name and file name; the committed ones by default. */
  readonly current?: ReadonlyMap<string, ReadonlyMap<string, string>>;
  readonly baseline?: (pkg: WorkspacePackage) => Baseline;
}

function committedReports(pkg: WorkspacePackage): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of entryPoints(pkg)) {
    const path = join(pkg.path, 'etc', e.reportName);
    if (existsSync(path)) out.set(e.reportName, readFileSync(path, 'utf8'));
  }
  return out;
}

function summary(diffs: ReadonlyMap<string, ReportDiff>): string {
  const parts: string[] = [];
  const all = (f: (d: ReportDiff) => readonly string[]) => [...diffs.values()].flatMap(f);
  const say = (label: string, names: readonly string[]) => {
    if (names.length > 0)
      parts.push(`${label} ${names.slice(0, 6).join(', ')}${names.length > 6 ? ', ...' : ''}`);
  };
  say(
    'removed',
    all((d) => d.removed),
  );
  say(
    'changed',
    all((d) => d.changed),
  );
  say(
    'added',
    all((d) => d.added),
  );
  say(
    'extended',
    all((d) => d.extended),
  );
  return parts.join('; ');
}

/** Runs the check over every published package (or those given). */
export function checkChangesetKinds(opts: KindOptions = {}): KindResult[] {
  const root = opts.root ?? REPO_ROOT;
  const packages = opts.packages ?? publishedPackages(root);
  const changesets = opts.changesets ?? pendingChangesets(root);
  return packages.map((pkg) => {
    const name = pkg.manifest.name;
    const base = (opts.baseline ?? ((p) => baselineOf(p, root)))(pkg);
    const current = opts.current?.get(name) ?? committedReports(pkg);
    const files = new Set([...base.reports.keys(), ...current.keys()]);
    const diffs = new Map(
      [...files].map((f) => [f, diffReports(base.reports.get(f), current.get(f))]),
    );
    const change = worstChange([...diffs.values()].map((d) => d.change));
    const required = requiredBump(change, base.version);
    let declared = bumpBetween(base.version, pkg.manifest.version);
    for (const c of changesets) declared = maxBump(declared, c.bumps.get(name) ?? 'none');
    const since = base.tag ?? 'nothing (never released)';
    const failure =
      maxBump(declared, required) === declared
        ? undefined
        : `${name}: the API changed since ${since} (${summary(diffs)}): it needs a ${required} changeset, ` +
          `and the pending changesets give ${declared === 'none' ? 'none' : declared}. Run \`npm run changeset\` ` +
          `and choose ${required} for ${name}.`;
    return {
      name,
      version: pkg.manifest.version,
      baseline: since,
      change,
      diffs,
      required,
      declared,
      failure,
    };
  });
}
