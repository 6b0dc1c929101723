/**
 * The reader of a folder of Proxy manifests, one for both the standalone
 * store's scans (`run --standalone`) and `proxy-op validate`: every
 * `*.yaml`/`*.yml` file (several documents per file allowed), YAML syntax
 * problems with line and column, each document against the Proxy (or
 * ProxyPool) schema with paths, and names defined twice.
 *
 * @module
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { type PoolSpec, validatePoolManifest } from '../api/pool.js';
import { formatProblems, type ProxySpec, validateProxyManifest } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { proxyKey } from '../store/proxies.js';

/** What a read of a manifests folder found. */
export interface ManifestRead {
  /** The valid Proxies by key, each with the file it came from; the first definition of a name wins. */
  readonly proxies: ReadonlyMap<
    string,
    {
      readonly spec: ProxySpec;
      readonly source: string;
      /** The manifest's `metadata.annotations` (`proxy-op.io/rotate-credentials` acts). */
      readonly annotations?: Readonly<Record<string, string>> | undefined;
    }
  >;
  /** Keys named by manifests that fail validation: their Proxies are to be kept as they were. */
  readonly invalidKeys: ReadonlySet<string>;
  /** Files that could not be read or parsed, or hold a manifest naming no Proxy: every Proxy from them is to be kept. */
  readonly brokenFiles: ReadonlySet<string>;
  /** Every problem, `file: path: message` (`file (document 2): ...` in a file of several). */
  readonly problems: readonly string[];
  /** The valid ProxyPools by key, each with its file. */
  readonly pools: ReadonlyMap<string, { readonly spec: PoolSpec; readonly source: string }>;
  /** Keys of ProxyPools whose manifests fail validation: kept as they were. */
  readonly invalidPoolKeys: ReadonlySet<string>;
}

/** Options of {@link readManifests}. */
export interface ReadManifestsOptions {
  /** Create the folder when it does not exist, and read it as empty (default: an absent folder rejects). */
  readonly create?: boolean | undefined;
}

/** Reads and validates every manifest in `dir`. */
export async function readManifests(
  dir: string,
  opts: ReadManifestsOptions = {},
): Promise<ManifestRead> {
  const problems: string[] = [];
  const proxies = new Map<
    string,
    {
      spec: ProxySpec;
      source: string;
      where: string;
      annotations?: Readonly<Record<string, string>> | undefined;
    }
  >();
  const invalidKeys = new Set<string>();
  const brokenFiles = new Set<string>();
  const pools = new Map<string, { spec: PoolSpec; source: string; where: string }>();
  const invalidPoolKeys = new Set<string>();
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => /\.ya?ml$/i.test(n) && !n.startsWith('.'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || opts.create !== true) throw err;
    await mkdir(dir, { recursive: true });
    names = [];
  }
  names.sort();
  const texts = await readAll(dir, names);
  for (const file of names) {
    const text = texts.get(file);
    if (text === undefined) continue;
    if (text instanceof Error) {
      problems.push(`${file}: ${text.message}`);
      brokenFiles.add(file);
      continue;
    }
    const lc = new LineCounter();
    const docs = parseAllDocuments(text, { lineCounter: lc });
    docs.forEach((doc, i) => {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      if (doc.errors.length > 0) {
        brokenFiles.add(file);
        for (const e of doc.errors) {
          const pos = lc.linePos(e.pos[0]);
          problems.push(
            `${where}: line ${pos.line}, column ${pos.col}: ${e.message.split('\n')[0]}`,
          );
        }
        return;
      }
      const raw: unknown = doc.toJS();
      if (raw === null || raw === undefined) return;
      const isPool = (raw as { kind?: unknown }).kind === 'ProxyPool';
      const v = isPool ? validatePoolManifest(raw) : validateProxyManifest(raw);
      if (!v.ok) {
        for (const line of formatProblems(v.problems)) problems.push(`${where}: ${line}`);
        const md = (raw as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
        if (typeof md?.name === 'string') {
          const ns = typeof md.namespace === 'string' ? md.namespace : 'default';
          (isPool ? invalidPoolKeys : invalidKeys).add(proxyKey(ns, md.name));
        } else brokenFiles.add(file);
        return;
      }
      const md = v.value.metadata;
      const key = proxyKey(md.namespace, md.name);
      const same = isPool ? pools.get(key) : proxies.get(key);
      if (same !== undefined) {
        problems.push(`${where}: metadata.name: ${key} is already defined in ${same.where}`);
        return;
      }
      if (v.value.kind === 'ProxyPool') pools.set(key, { spec: v.value.spec, source: file, where });
      else {
        const { annotations } = v.value.metadata;
        proxies.set(key, { spec: v.value.spec, source: file, where, annotations });
      }
    });
  }
  return { proxies, invalidKeys, brokenFiles, problems, pools, invalidPoolKeys };
}

/**
 * Validates every manifest in `dir` without a store, for
 * `proxy-op validate`: resolves with the number of valid Proxies and every
 * problem (as `readManifests` finds them).
 */
export async function validateManifestsDir(
  dir: string,
): Promise<{ count: number; problems: string[] }> {
  const read = await readManifests(dir);
  return { count: read.proxies.size, problems: [...read.problems] };
}

/** Reads the files concurrently (a bounded number at a time); a file gone meanwhile is left out. */
async function readAll(
  dir: string,
  names: readonly string[],
): Promise<Map<string, string | Error>> {
  const out = new Map<string, string | Error>();
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const file = names[next++] as string;
      try {
        out.set(file, await readFile(join(dir, file), 'utf8'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') out.set(file, err as Error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DEFAULTS.manifestReads, names.length) }, worker));
  return out;
}
