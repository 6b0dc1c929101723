// Writes the build context of the operator's container image (see ../Containerfile): the
// operator and every first-party provider package of this checkout, packed with `npm pack`,
// with the workspace packages they depend on, and a package.json that installs them.
//
//   node scripts/image-context.ts OUT_DIR
//
// The image's tests install the same context the same way and run proxy-op from it.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const PACKAGES = fileURLToPath(new URL('../../', import.meta.url));

interface Manifest {
  name: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** The workspace packages, by name: their folder and manifest. */
async function workspace(): Promise<Map<string, { dir: string; manifest: Manifest }>> {
  const out = new Map<string, { dir: string; manifest: Manifest }>();
  for (const entry of await readdir(PACKAGES, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = join(PACKAGES, entry.name);
    try {
      const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as Manifest;
      out.set(manifest.name, { dir, manifest });
    } catch {
      // not a package
    }
  }
  return out;
}

/**
 * The packages the image holds: the operator, each first-party provider this checkout has,
 * and, transitively, the workspace packages they depend on (dependencies and peers).
 */
export async function imagePackages(): Promise<Map<string, string>> {
  const ws = await workspace();
  // The built operator (npm run build) says which packages the short names come from.
  const { FIRST_PARTY_PROVIDERS } = await import('../dist/providers/registry.js');
  const wanted = ['@proxy-op/operator', ...Object.values(FIRST_PARTY_PROVIDERS)];
  const chosen = new Map<string, string>();
  const visit = (name: string) => {
    const p = ws.get(name);
    if (p === undefined || chosen.has(name)) return;
    if (p.manifest.private) throw new Error(`${name} is private and cannot go into the image`);
    chosen.set(name, p.dir);
    for (const dep of Object.keys({ ...p.manifest.dependencies, ...p.manifest.peerDependencies })) {
      if (ws.has(dep)) visit(dep);
    }
  };
  for (const name of wanted) visit(name);
  return chosen;
}

/** Packs the image's packages into `out/tgz` and writes `out/package.json`; returns the names. */
export async function writeImageContext(out: string): Promise<string[]> {
  const dir = resolve(out);
  await mkdir(join(dir, 'tgz'), { recursive: true });
  const packages = await imagePackages();
  const deps: Record<string, string> = {};
  for (const [name, pkgDir] of packages) {
    const { stdout } = await exec(
      'npm',
      ['pack', '--json', '--pack-destination', join(dir, 'tgz')],
      {
        cwd: pkgDir,
      },
    );
    const [info] = JSON.parse(stdout) as [{ filename: string }];
    deps[name] = `file:./tgz/${info.filename}`;
  }
  // The API the operator and the providers share one copy of (a peer dependency of each).
  const operator = JSON.parse(
    await readFile(join(PACKAGES, 'operator', 'package.json'), 'utf8'),
  ) as Manifest;
  const api = operator.devDependencies?.['@opentelemetry/api'];
  if (api === undefined) throw new Error('the operator pins no @opentelemetry/api');
  deps['@opentelemetry/api'] = api;
  await writeFile(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'proxy-op-image', private: true, type: 'module', dependencies: deps }, null, 2)}\n`,
  );
  return [...packages.keys()];
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (out === undefined) {
    process.stderr.write('usage: node scripts/image-context.ts OUT_DIR\n');
    process.exit(2);
  }
  const names = await writeImageContext(out);
  process.stdout.write(`${names.join('\n')}\n`);
}
