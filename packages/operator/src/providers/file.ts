/**
 * The providers file: one YAML file naming the installation and the
 * configured providers (each with its `probe` settings and, for a billed
 * one, its `price`), validated whole
 * (every problem printed with its path) against each provider module's
 * config schema, and watched for
 * changes so it is reloaded without a restart.
 *
 * @module
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  DEFAULT_INSTALLATION,
  formatConfigIssues,
  installationProblem,
  profileProblems,
} from '@proxy-op/contract';
import { isMap, isSeq, LineCounter, parseDocument } from 'yaml';
import { DEFAULTS } from '../defaults.js';
import { type ProbeSettings, parseProbeSettings } from '../probe/settings.js';
import { type ProviderPrice, parsePrice } from './price.js';
import type { ProviderRegistry, RegistryEntry } from './registry.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** One provider entry of a valid providers file. */
export interface ProviderEntry {
  /** The provider's name, unique in the file. */
  readonly name: string;
  /** As written: a registered type, an npm package name or a path. */
  readonly type: string;
  /** The module's own type (the key of the block). */
  readonly moduleType: string;
  /** The module the type resolved to. */
  readonly entry: RegistryEntry;
  /** The block as written (validated by the module's schema). */
  readonly block: unknown;
  /** Its `probe` settings (the defaults when it has none). */
  readonly probe?: ProbeSettings | undefined;
  /** Its `price`, when the file gives one. */
  readonly price?: ProviderPrice | undefined;
}

/** A valid providers file. */
export interface ProvidersConfig {
  /** The installation id (default `default`). */
  readonly installation: string;
  /** The providers, in file order. */
  readonly providers: readonly ProviderEntry[];
}

/** The outcome of loading a providers file. */
export type ProvidersLoad =
  | { readonly ok: true; readonly config: ProvidersConfig }
  | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Parses and validates a providers file's text as a whole. Every problem
 * is reported, each with its path (`providers[1].memory.zones[0]: ...`);
 * YAML syntax errors carry the line and column.
 */
export async function parseProvidersConfig(
  text: string,
  registry: ProviderRegistry,
  opts: { baseDir?: string } = {},
): Promise<ProvidersLoad> {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => {
        const pos = lc.linePos(e.pos[0]);
        return `line ${pos.line}, column ${pos.col}: ${e.message.split('\n')[0]}`;
      }),
    };
  }
  const problems: string[] = [];
  const raw: unknown = doc.toJS();
  if (raw === null || raw === undefined || !isMap(doc.contents)) {
    return { ok: false, problems: ['(root): must be a mapping with installation and providers'] };
  }
  const root = raw as Record<string, unknown>;
  for (const k of Object.keys(root)) {
    if (k !== 'installation' && k !== 'providers') problems.push(`${k}: unknown field`);
  }
  let installation = DEFAULT_INSTALLATION;
  if (root.installation !== undefined) {
    if (typeof root.installation !== 'string') problems.push('installation: must be a string');
    else {
      const p = installationProblem(root.installation);
      if (p !== undefined) problems.push(`installation: ${p}`);
      else installation = root.installation;
    }
  }
  const list = root.providers ?? [];
  const entries: ProviderEntry[] = [];
  if (!Array.isArray(list) || (root.providers !== undefined && !isSeq(doc.get('providers')))) {
    problems.push('providers: must be a list');
  } else {
    const seen = new Map<string, number>();
    const baseDir = opts.baseDir ?? process.cwd();
    for (let i = 0; i < list.length; i++) {
      const at = `providers[${i}]`;
      const item: unknown = list[i];
      if (item === null || typeof item !== 'object' || Array.isArray(item)) {
        problems.push(`${at}: must be a mapping with name and type`);
        continue;
      }
      const o = item as Record<string, unknown>;
      const name = o.name;
      if (typeof name !== 'string' || !DNS_LABEL.test(name)) {
        problems.push(
          `${at}.name: ${name === undefined ? 'is required' : `${JSON.stringify(name)} is not a lowercase DNS label`}`,
        );
      } else if (seen.has(name)) {
        problems.push(`${at}.name: "${name}" is already used by providers[${seen.get(name)}]`);
      } else seen.set(name, i);
      if (typeof o.type !== 'string' || o.type === '') {
        problems.push(`${at}.type: is required`);
        continue;
      }
      let entry: RegistryEntry;
      try {
        entry = await registry.resolve(o.type, baseDir);
      } catch (err) {
        problems.push(`${at}.type: ${(err as Error).message}`);
        continue;
      }
      const moduleType = entry.module.type;
      for (const k of Object.keys(o)) {
        if (k !== 'name' && k !== 'type' && k !== 'probe' && k !== 'price' && k !== moduleType) {
          problems.push(
            `${at}.${k}: unknown field; the ${moduleType} block goes under "${moduleType}"`,
          );
        }
      }
      const probe = parseProbeSettings(o.probe, `${at}.probe`);
      problems.push(...probe.problems);
      const price = parsePrice(o.price, `${at}.price`, entry.module.profile);
      problems.push(...price.problems);
      for (const p of profileProblems(entry.module.profile)) {
        problems.push(`${at}.type: module ${moduleType} has an invalid profile: ${p}`);
      }
      const block = o[moduleType];
      const result = await entry.module.configSchema['~standard'].validate(block);
      if (result.issues !== undefined) {
        problems.push(...formatConfigIssues(result.issues, `${at}.${moduleType}`));
      }
      if (typeof name === 'string') {
        entries.push({
          name,
          type: o.type,
          moduleType,
          entry,
          block,
          probe: probe.settings,
          price: price.price,
        });
      }
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: { installation, providers: entries } };
}

/** Reads and validates a providers file (see {@link parseProvidersConfig}). */
export async function loadProvidersFile(
  path: string,
  registry: ProviderRegistry,
): Promise<ProvidersLoad> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { ok: false, problems: [`${path}: ${(err as Error).message}`] };
  }
  return parseProvidersConfig(text, registry, { baseDir: dirname(resolve(path)) });
}

/** What a file's stat says of its version: a change in any field means new content. */
export interface FileStamp {
  /** Modification time, in milliseconds. */
  readonly mtimeMs: number;
  /** Size in bytes. */
  readonly size: number;
  /** Inode (a Kubernetes ConfigMap's symlink swap changes it). */
  readonly ino: number;
}

/** The file's {@link FileStamp}; all zeros when it cannot be read (absent, say). */
export async function fileStamp(path: string): Promise<FileStamp> {
  try {
    const s = await stat(path);
    return { mtimeMs: s.mtimeMs, size: s.size, ino: s.ino };
  } catch {
    return { mtimeMs: 0, size: 0, ino: 0 };
  }
}

/**
 * Watches a providers file and calls `onChange` when its content changes
 * (stat polling, which also sees a Kubernetes ConfigMap's symlink swap).
 * Pass `since`, the stamp taken before the version in use was read, and a
 * change made before the first poll is seen too. Returns the stop function.
 */
export function watchProvidersFile(
  path: string,
  onChange: () => void,
  intervalMs: number = DEFAULTS.providersPollMs,
  since?: FileStamp,
): () => void {
  let last = since;
  let busy = false;
  let stopped = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      const cur = await fileStamp(path);
      if (stopped) return;
      const changed =
        last !== undefined &&
        (cur.mtimeMs !== last.mtimeMs || cur.size !== last.size || cur.ino !== last.ino);
      last = cur;
      if (changed) onChange();
    } finally {
      busy = false;
    }
  };
  void poll();
  const timer = setInterval(() => void poll(), intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
