// The repo's packages as the release tooling sees them: every folder under packages/ with a
// package.json, which of them are published (no `"private": true`), their public entry points
// (the `exports` map) and the API report file each entry point has under `etc/`.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is `packages/repo-checks/src/workspace.ts`). */
export const REPO_ROOT: string = fileURLToPath(new URL('../../..', import.meta.url));

/** The fields of a package.json the release tooling reads. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly type?: string;
  readonly sideEffects?: boolean;
  readonly exports?: Readonly<Record<string, string | Readonly<Record<string, string>>>>;
  readonly files?: readonly string[];
  readonly bin?: string | Readonly<Record<string, string>>;
  readonly engines?: Readonly<Record<string, string>>;
  readonly repository?: {
    readonly type?: string;
    readonly url?: string;
    readonly directory?: string;
  };
  readonly publishConfig?: { readonly access?: string; readonly provenance?: boolean };
  readonly license?: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
}

/** One folder under packages/. */
export interface WorkspacePackage {
  /** The folder name, e.g. `provider-proxmox`. */
  readonly dir: string;
  /** The absolute path of the folder. */
  readonly path: string;
  readonly manifest: Manifest;
}

/** One public entry point of a package: a key of its `exports` map with a `types` target. */
export interface EntryPoint {
  /** The `exports` key: `.` or `./<subpath>`. */
  readonly subpath: string;
  /** The import specifier a user writes: `@proxy-op/contract`, `@proxy-op/contract/cidr`. */
  readonly specifier: string;
  /** The built declaration file, absolute. */
  readonly dts: string;
  /** The report's file name under `etc/`: `<unscoped>.api.md`, `<unscoped>-<subpath>.api.md`. */
  readonly reportName: string;
}

/** Reads a package.json. */
export function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** Every package of the repo at `root`, sorted by folder name. */
export function workspacePackages(root: string = REPO_ROOT): WorkspacePackage[] {
  const base = join(root, 'packages');
  return readdirSync(base)
    .filter((dir) => existsSync(join(base, dir, 'package.json')))
    .sort()
    .map((dir) => ({ dir, path: join(base, dir), manifest: readManifest(join(base, dir)) }));
}

/** The packages that are published: those without `"private": true`. */
export function publishedPackages(root: string = REPO_ROOT): WorkspacePackage[] {
  return workspacePackages(root).filter((p) => p.manifest.private !== true);
}

/** A package name without its scope: `@proxy-op/contract` is `contract`. */
export function unscopedName(name: string): string {
  return name.replace(/^@[^/]+\//, '');
}

/** The entry points of a package, `.` first; `./package.json` is not one. */
export function entryPoints(pkg: WorkspacePackage): EntryPoint[] {
  const unscoped = unscopedName(pkg.manifest.name);
  return Object.entries(pkg.manifest.exports ?? {})
    .filter(([key]) => key !== './package.json')
    .map(([subpath, target]) => {
      const types = typeof target === 'string' ? undefined : target.types;
      if (types === undefined) throw new Error(`${pkg.manifest.name}: "${subpath}" has no types`);
      const rest = subpath === '.' ? '' : subpath.slice(2);
      return {
        subpath,
        specifier: rest === '' ? pkg.manifest.name : `${pkg.manifest.name}/${rest}`,
        dts: join(pkg.path, types),
        reportName: `${unscoped}${rest === '' ? '' : `-${rest.replaceAll('/', '-')}`}.api.md`,
      };
    });
}

/** The names of the workspace packages a manifest depends on at run time, with their kind. */
export function runtimeDependencies(
  manifest: Manifest,
): { name: string; kind: 'dependencies' | 'peerDependencies' | 'optionalDependencies' }[] {
  const out: {
    name: string;
    kind: 'dependencies' | 'peerDependencies' | 'optionalDependencies';
  }[] = [];
  for (const kind of ['dependencies', 'peerDependencies', 'optionalDependencies'] as const)
    for (const name of Object.keys(manifest[kind] ?? {})) out.push({ name, kind });
  return out;
}

/**
 * The packages in dependency order: each after every workspace package it depends on at run
 * time, ties broken by name. Throws on a cycle.
 */
export function dependencyOrder(packages: readonly WorkspacePackage[]): WorkspacePackage[] {
  const byName = new Map(packages.map((p) => [p.manifest.name, p]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: WorkspacePackage[] = [];
  const visit = (p: WorkspacePackage): void => {
    if (done.has(p.manifest.name)) return;
    if (visiting.has(p.manifest.name)) throw new Error(`dependency cycle at ${p.manifest.name}`);
    visiting.add(p.manifest.name);
    for (const { name } of runtimeDependencies(p.manifest).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const dep = byName.get(name);
      if (dep !== undefined) visit(dep);
    }
    visiting.delete(p.manifest.name);
    done.add(p.manifest.name);
    out.push(p);
  };
  for (const p of [...packages].sort((a, b) => a.manifest.name.localeCompare(b.manifest.name)))
    visit(p);
  return out;
}
