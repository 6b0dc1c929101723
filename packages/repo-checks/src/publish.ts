// Packing and publishing. `publishAll` packs every published package and publishes the
// tarballs in dependency order (a package after the workspace packages it depends on), with
// public access and provenance, skipping versions the registry already has. With `dryRun` it
// runs `npm publish --dry-run` on each tarball against an unreachable registry with npm offline,
// so nothing leaves the machine. The checks on what a tarball holds live here too.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  dependencyOrder,
  entryPoints,
  type Manifest,
  publishedPackages,
  REPO_ROOT,
  runtimeDependencies,
  type WorkspacePackage,
} from './workspace.ts';

const exec = promisify(execFile);

/** What `npm pack --json` says of one tarball. */
export interface PackInfo {
  readonly name: string;
  readonly version: string;
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/**
 * Packs the packages with one `npm pack` call: into `destination`, or with `--dry-run` (the
 * file lists only) when it is undefined.
 */
export async function pack(
  packages: readonly WorkspacePackage[],
  destination: string | undefined,
  cwd: string = REPO_ROOT,
): Promise<PackInfo[]> {
  const where = destination === undefined ? ['--dry-run'] : ['--pack-destination', destination];
  const { stdout } = await exec(
    'npm',
    ['pack', '--json', '--ignore-scripts', ...where, ...packages.map((p) => p.path)],
    { cwd, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as PackInfo[];
}

/** The files npm puts in every tarball whatever `files` says. */
const ALWAYS_PACKED = /^(package\.json|README(\.\w+)?|LICEN[CS]E(\.\w+)?|CHANGELOG(\.\w+)?)$/i;

function matches(pattern: string, file: string): boolean {
  const p = pattern.replace(/^\.\//, '').replace(/\/$/, '');
  if (!p.includes('*')) return file === p || file.startsWith(`${p}/`);
  const re = new RegExp(
    `^${p
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*')}(/.*)?$`,
  );
  return re.test(file);
}

/**
 * Where a tarball's contents and its manifest's `files` disagree: a packed file no entry of
 * `files` admits, an entry that packs nothing, and an `exports` or `bin` target that is not
 * packed. Empty when they agree.
 */
export function filesMismatch(manifest: Manifest, packed: readonly string[]): string[] {
  const include = (manifest.files ?? []).filter((f) => !f.startsWith('!'));
  const exclude = (manifest.files ?? []).filter((f) => f.startsWith('!')).map((f) => f.slice(1));
  const out: string[] = [];
  for (const file of packed) {
    if (ALWAYS_PACKED.test(file)) continue;
    if (!include.some((p) => matches(p, file)) || exclude.some((p) => matches(p, file)))
      out.push(`${manifest.name}: ${file} is packed but not named by "files"`);
  }
  for (const p of include)
    if (!packed.some((f) => matches(p, f)))
      out.push(`${manifest.name}: "files" names ${p}, which packs nothing`);
  const targets: string[] = [];
  for (const [key, target] of Object.entries(manifest.exports ?? {}))
    if (key !== './package.json')
      targets.push(...(typeof target === 'string' ? [target] : Object.values(target)));
  if (typeof manifest.bin === 'string') targets.push(manifest.bin);
  else targets.push(...Object.values(manifest.bin ?? {}));
  for (const t of targets) {
    const file = t.replace(/^\.\//, '');
    if (!packed.includes(file)) out.push(`${manifest.name}: ${file} is a target but not packed`);
  }
  return out;
}

/** Published packages that depend at run time on a private workspace package. */
export function privateDependencies(all: readonly WorkspacePackage[]): string[] {
  const priv = new Set(all.filter((p) => p.manifest.private === true).map((p) => p.manifest.name));
  return all
    .filter((p) => p.manifest.private !== true)
    .flatMap((p) =>
      runtimeDependencies(p.manifest)
        .filter((d) => priv.has(d.name))
        .map((d) => `${p.manifest.name}: ${d.kind} names the private package ${d.name}`),
    );
}

/**
 * Where the `exports` map could reach past the public surface: a wildcard subpath, a target
 * outside `dist/`, or a subpath without declarations. Empty when none.
 */
export function exportsProblems(pkg: WorkspacePackage): string[] {
  const out: string[] = [];
  for (const [key, target] of Object.entries(pkg.manifest.exports ?? {})) {
    if (key === './package.json') continue;
    if (key.includes('*')) out.push(`${pkg.manifest.name}: "${key}" is a pattern: name each entry`);
    for (const t of typeof target === 'string' ? [target] : Object.values(target))
      if (!t.startsWith('./dist/') || t.includes('*'))
        out.push(`${pkg.manifest.name}: "${key}" points at ${t}, outside the built dist/`);
  }
  try {
    entryPoints(pkg);
  } catch (err) {
    out.push((err as Error).message);
  }
  return out;
}

/** One package's publish: what npm said, or why it was skipped. */
export interface PublishResult {
  readonly name: string;
  readonly version: string;
  readonly outcome: 'published' | 'dry-run' | 'already published';
  readonly output: string;
}

/** Options of `publishAll`. */
export interface PublishOptions {
  readonly dryRun: boolean;
  readonly root?: string;
  readonly packages?: readonly WorkspacePackage[];
  /** Called before each publish, for a progress line. */
  readonly onPackage?: (name: string, version: string) => void;
}

async function isOnRegistry(name: string, version: string, cwd: string): Promise<boolean> {
  try {
    const { stdout } = await exec('npm', ['view', `${name}@${version}`, 'version'], { cwd });
    return stdout.trim() === version;
  } catch (err) {
    if (/E404|404 Not Found/.test(String((err as { stderr?: string }).stderr ?? err))) return false;
    throw err;
  }
}

/** The dry run's flags, above any config: a registry nothing listens on, and npm offline. */
const DRY_RUN_FLAGS = ['--registry', 'http://127.0.0.1:9/', '--offline', '--fetch-retries', '0'];

/** Packs and publishes (or dry-runs) every published package in dependency order. */
export async function publishAll(opts: PublishOptions): Promise<PublishResult[]> {
  const root = opts.root ?? REPO_ROOT;
  const order = dependencyOrder(opts.packages ?? publishedPackages(root));
  const temp = await mkdtemp(join(tmpdir(), 'proxy-op-publish-'));
  try {
    const infos = await pack(order, temp, root);
    const npmrc = join(temp, 'npmrc');
    // The dry run's own (empty) user config: no token or registry of the machine's is read.
    await writeFile(npmrc, '');
    const results: PublishResult[] = [];
    for (const [i, pkg] of order.entries()) {
      const info = infos[i]!;
      const { name, version } = pkg.manifest;
      if (info.name !== name) throw new Error(`npm pack gave ${info.name} for ${name}`);
      if (!opts.dryRun && (await isOnRegistry(name, version, root))) {
        results.push({ name, version, outcome: 'already published', output: '' });
        continue;
      }
      opts.onPackage?.(name, version);
      const args = ['publish', join(temp, info.filename), '--access', 'public'];
      const run = opts.dryRun
        ? exec('npm', [...args, '--dry-run', '--userconfig', npmrc, ...DRY_RUN_FLAGS], {
            cwd: temp,
          })
        : exec('npm', [...args, '--provenance'], { cwd: root });
      const { stdout, stderr } = await run;
      results.push({
        name,
        version,
        outcome: opts.dryRun ? 'dry-run' : 'published',
        output: `${stdout}${stderr}`,
      });
    }
    return results;
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}
