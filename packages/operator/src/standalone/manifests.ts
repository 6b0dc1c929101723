/**
 * The reader of a folder of Proxy manifests, one for both the standalone
 * store's scans (`run --standalone`) and `proxy-op validate`: every
 * `*.yaml`/`*.yml` file (several documents per file allowed), YAML syntax
 * problems with line and column, each document against the Proxy (or
 * ProxyPool) schema with paths, names defined twice, a file over the size
 * bound refused, and a file with no document reported as a warning. A
 * reader keeps what it made of each file and parses a file again only once
 * it changed.
 *
 * @module
 */
import { mkdir, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { type PoolSpec, validatePoolManifest } from '../api/pool.js';
import { formatProblems, type ProxySpec, validateProxyManifest } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { proxyKey } from '../store/proxies.js';

/** A valid Proxy of a manifest. */
interface FoundProxy {
  readonly spec: ProxySpec;
  readonly source: string;
  /** The manifest's `metadata.annotations` (`proxy-op.io/rotate-credentials` acts). */
  readonly annotations?: Readonly<Record<string, string>> | undefined;
}

/** What a read of a manifests folder found. */
export interface ManifestRead {
  /** The valid Proxies by key, each with the file it came from; the first definition of a name wins. */
  readonly proxies: ReadonlyMap<string, FoundProxy>;
  /** Keys named by manifests that fail validation: their Proxies are to be kept as they were. */
  readonly invalidKeys: ReadonlySet<string>;
  /** Files that could not be read or parsed, or hold a manifest naming no Proxy: every Proxy from them is to be kept. */
  readonly brokenFiles: ReadonlySet<string>;
  /** Every problem, `file: path: message` (`file (document 2): ...` in a file of several). */
  readonly problems: readonly string[];
  /** What is not wrong but likely a mistake, `file: message` (a file with no document). */
  readonly warnings: readonly string[];
  /** The valid ProxyPools by key, each with its file. */
  readonly pools: ReadonlyMap<string, { readonly spec: PoolSpec; readonly source: string }>;
  /** Keys of ProxyPools whose manifests fail validation: kept as they were. */
  readonly invalidPoolKeys: ReadonlySet<string>;
}

/** Options of {@link ManifestReader.read}. */
export interface ReadManifestsOptions {
  /** Create the folder when it does not exist, and read it as empty (default: an absent folder rejects). */
  readonly create?: boolean | undefined;
}

/** What one file holds, as parsed. */
interface FileRead {
  readonly problems: string[];
  readonly warnings: string[];
  readonly broken: boolean;
  readonly proxies: Array<{ key: string; where: string; found: FoundProxy }>;
  readonly pools: Array<{ key: string; where: string; spec: PoolSpec }>;
  readonly invalidKeys: string[];
  readonly invalidPoolKeys: string[];
}

/** What a file is, as `stat` says: a change of any part means it is read again. */
function stampOf(s: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
}

/** Reads a folder of manifests again and again, parsing only the files that changed. */
export class ManifestReader {
  readonly #dir: string;
  readonly #readText: typeof readBounded;
  readonly #files = new Map<string, { readonly stamp: string; readonly read: FileRead }>();

  /** `readText` reads one file's text (a file's reads can be counted through it). */
  constructor(dir: string, readText: typeof readBounded = readBounded) {
    this.#dir = dir;
    this.#readText = readText;
  }

  /** Reads and validates every manifest of the folder. */
  async read(opts: ReadManifestsOptions = {}): Promise<ManifestRead> {
    let names: string[];
    try {
      names = (await readdir(this.#dir)).filter((n) => /\.ya?ml$/i.test(n) && !n.startsWith('.'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || opts.create !== true) throw err;
      await mkdir(this.#dir, { recursive: true });
      names = [];
    }
    names.sort();
    const reads = await this.#readAll(names);
    for (const file of [...this.#files.keys()]) if (!reads.has(file)) this.#files.delete(file);

    const problems: string[] = [];
    const warnings: string[] = [];
    const proxies = new Map<string, FoundProxy & { where: string }>();
    const pools = new Map<string, { spec: PoolSpec; source: string; where: string }>();
    const invalidKeys = new Set<string>();
    const invalidPoolKeys = new Set<string>();
    const brokenFiles = new Set<string>();
    for (const file of names) {
      const r = reads.get(file);
      if (r === undefined) continue;
      problems.push(...r.problems);
      warnings.push(...r.warnings);
      if (r.broken) brokenFiles.add(file);
      for (const k of r.invalidKeys) invalidKeys.add(k);
      for (const k of r.invalidPoolKeys) invalidPoolKeys.add(k);
      for (const p of r.proxies) {
        const same = proxies.get(p.key);
        if (same !== undefined) {
          problems.push(`${p.where}: metadata.name: ${p.key} is already defined in ${same.where}`);
        } else proxies.set(p.key, { ...p.found, where: p.where });
      }
      for (const p of r.pools) {
        const same = pools.get(p.key);
        if (same !== undefined) {
          problems.push(`${p.where}: metadata.name: ${p.key} is already defined in ${same.where}`);
        } else pools.set(p.key, { spec: p.spec, source: file, where: p.where });
      }
    }
    return { proxies, invalidKeys, brokenFiles, problems, warnings, pools, invalidPoolKeys };
  }

  /** Each file's read: kept when its stamp did not change, else read again (a bounded number at once). */
  async #readAll(names: readonly string[]): Promise<Map<string, FileRead>> {
    const out = new Map<string, FileRead>();
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const file = names[next++] as string;
        const r = await this.#readFile(file);
        if (r !== undefined) out.set(file, r);
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(DEFAULTS.manifestReads, names.length) }, worker),
    );
    return out;
  }

  /** One file's read; undefined when it is gone. */
  async #readFile(file: string): Promise<FileRead | undefined> {
    const path = join(this.#dir, file);
    let stamp: string;
    let size: number;
    try {
      const s = await stat(path);
      stamp = stampOf(s);
      size = s.size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return failed(file, (err as Error).message);
    }
    const kept = this.#files.get(file);
    if (kept?.stamp === stamp) return kept.read;
    const bound = DEFAULTS.manifestMaxBytes;
    let read: FileRead;
    if (size > bound) {
      read = failed(
        file,
        `${size} bytes, over the bound of ${bound} bytes (1 MiB); split it into smaller files`,
      );
    } else {
      let text: string | undefined;
      try {
        text = await this.#readText(path, bound);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        read = failed(file, (err as Error).message);
      }
      read ??=
        text === undefined
          ? failed(
              file,
              `grew past the bound of ${bound} bytes (1 MiB) while read; split it into smaller files`,
            )
          : parseFile(file, text);
    }
    this.#files.set(file, { stamp, read });
    return read;
  }
}

/** A file that cannot be read: its problem, and every Proxy from it kept as it was. */
function failed(file: string, message: string): FileRead {
  return {
    problems: [`${file}: ${message}`],
    warnings: [],
    broken: true,
    proxies: [],
    pools: [],
    invalidKeys: [],
    invalidPoolKeys: [],
  };
}

/** The file's text, or undefined when it holds more than `bound` bytes. */
export async function readBounded(path: string, bound: number): Promise<string | undefined> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(bound + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, length, buf.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > bound) return undefined;
    }
    return buf.subarray(0, length).toString('utf8');
  } finally {
    await fh.close();
  }
}

/** Parses and validates one file's documents. */
function parseFile(file: string, text: string): FileRead {
  const out: FileRead = {
    problems: [],
    warnings: [],
    broken: false,
    proxies: [],
    pools: [],
    invalidKeys: [],
    invalidPoolKeys: [],
  };
  let mutableBroken = false;
  const lc = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lc });
  let documents = 0;
  docs.forEach((doc, i) => {
    const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
    if (doc.errors.length > 0) {
      mutableBroken = true;
      for (const e of doc.errors) {
        const pos = lc.linePos(e.pos[0]);
        out.problems.push(
          `${where}: line ${pos.line}, column ${pos.col}: ${e.message.split('\n')[0]}`,
        );
      }
      return;
    }
    const raw: unknown = doc.toJS();
    if (raw === null || raw === undefined) return;
    documents++;
    const isPool = (raw as { kind?: unknown }).kind === 'ProxyPool';
    const v = isPool ? validatePoolManifest(raw) : validateProxyManifest(raw);
    if (!v.ok) {
      for (const line of formatProblems(v.problems)) out.problems.push(`${where}: ${line}`);
      const md = (raw as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
      if (typeof md?.name === 'string') {
        const ns = typeof md.namespace === 'string' ? md.namespace : 'default';
        (isPool ? out.invalidPoolKeys : out.invalidKeys).push(proxyKey(ns, md.name));
      } else mutableBroken = true;
      return;
    }
    const md = v.value.metadata;
    const key = proxyKey(md.namespace, md.name);
    if (v.value.kind === 'ProxyPool') out.pools.push({ key, where, spec: v.value.spec });
    else {
      const { annotations } = v.value.metadata;
      out.proxies.push({ key, where, found: { spec: v.value.spec, source: file, annotations } });
    }
  });
  if (documents === 0 && out.problems.length === 0) {
    out.warnings.push(`${file}: no documents (an empty manifest defines nothing)`);
  }
  return { ...out, broken: mutableBroken };
}

/**
 * Validates every manifest in `dir` without a store, for
 * `proxy-op validate`: resolves with the number of valid Proxies, every
 * problem and every warning (as a {@link ManifestReader} finds them).
 */
export async function validateManifestsDir(
  dir: string,
): Promise<{ count: number; problems: string[]; warnings: string[] }> {
  const read = await new ManifestReader(dir).read();
  return { count: read.proxies.size, problems: [...read.problems], warnings: [...read.warnings] };
}
