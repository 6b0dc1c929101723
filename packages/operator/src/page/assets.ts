/**
 * The status page's browser code, as the package's build bundled it
 * (`dist/status-page/`: `index.html` and hashed files under `assets/`):
 * read into memory once, each file beside its gzip, so serving it touches
 * no disk and no network.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** One file of the bundle. */
export interface PageAsset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer;
  /** Hashed names never change content: cached for good. */
  readonly immutable: boolean;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * Where the bundle is: beside the built module (`dist/page/` →
 * `dist/status-page/`), or, when this module runs from its source (tests),
 * in the package's `dist/`.
 */
export function defaultAssetsDir(): string {
  const built = fileURLToPath(new URL('../status-page/', import.meta.url));
  if (existsSync(join(built, 'index.html'))) return built;
  return fileURLToPath(new URL('../../dist/status-page/', import.meta.url));
}

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await files(path)));
    else out.push(path);
  }
  return out;
}

/**
 * Reads the bundle: URL path (`/index.html`, `/assets/index-1a2b.js`) to
 * file. Undefined when it is not built.
 */
export async function loadAssets(dir: string): Promise<Map<string, PageAsset> | undefined> {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const out = new Map<string, PageAsset>();
  for (const file of await files(dir)) {
    const type = TYPES[extname(file)];
    if (type === undefined) continue;
    const body = await readFile(file);
    const path = `/${relative(dir, file).split(sep).join('/')}`;
    out.set(path, {
      type,
      body,
      gzip: gzipSync(body, { level: 9 }),
      immutable: path.startsWith('/assets/'),
    });
  }
  return out;
}
