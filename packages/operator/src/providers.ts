/**
 * The providers file: one YAML file naming the installation and the
 * configured providers, validated whole (every problem printed with its
 * path), loaded into providers by type (built in, registered, or an npm
 * package exporting a provider module), and reloaded without a restart.
 *
 * @module
 */
import { unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createProvider,
  DEFAULT_INSTALLATION,
  formatConfigIssues,
  installationProblem,
  type Logger,
  type Provider,
  type ProviderDeps,
  type ProviderModule,
  profileProblems,
  silentLogger,
} from '@proxy-op/contract';
import { providerModule as localProviderModule } from '@proxy-op/provider-local';
import { isMap, isSeq, LineCounter, parseDocument } from 'yaml';
import { canonicalJson } from './cloudinit.js';

/** A provider module of any config type. */
export type AnyProviderModule = ProviderModule<unknown, ProviderDeps>;

/** One way to build providers of a type: the module and any extra dependencies it needs. */
export interface RegistryEntry {
  readonly module: AnyProviderModule;
  /** Extra dependencies for `module.create` (a backend handle, a client), per provider name. */
  readonly deps?: ((name: string) => Record<string, unknown>) | undefined;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PACKAGE_NAME = /^(@[a-z0-9][-a-z0-9._~]*\/)?[a-z0-9][-a-z0-9._~]*(\/[-a-z0-9._~/]+)?$/;

/**
 * The built-in provider modules, by type: `local` (`@proxy-op/provider-local`,
 * proxies as processes on this machine). Other provider packages are named
 * by their npm name in the `type` field.
 */
export function builtinProviders(): ReadonlyMap<string, RegistryEntry> {
  return new Map([
    [localProviderModule.type, { module: localProviderModule as unknown as AnyProviderModule }],
  ]);
}

/**
 * The first-party provider types by their short names, and the npm package
 * each comes from. They are loaded when installed beside the operator (the
 * container image has them all); `local` is built in.
 */
export const FIRST_PARTY_PROVIDERS: Readonly<Record<string, string>> = Object.freeze({
  proxmox: '@proxy-op/provider-proxmox',
  kvm: '@proxy-op/provider-kvm',
  kvm2: '@proxy-op/provider-kvm2',
  gcp: '@proxy-op/provider-gcp',
  kubernetes: '@proxy-op/provider-kubernetes',
});

/** The name (and type) of the provider used when no providers file configures any. */
export const DEFAULT_PROVIDER = 'local';

function isModule(m: unknown): m is AnyProviderModule {
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof (m as AnyProviderModule).type === 'string' &&
    typeof (m as AnyProviderModule).create === 'function' &&
    typeof (m as AnyProviderModule).classify === 'function' &&
    typeof (m as AnyProviderModule).configSchema === 'object' &&
    typeof (m as AnyProviderModule).profile === 'object'
  );
}

/**
 * Resolves provider types to modules: the registered types first (built-ins
 * and whatever `register` added), then, for a type that is an npm package
 * name or a path (`./x.js`, `/abs/x.js`, relative to the providers file), a
 * dynamic import of a module that exports `providerModule` or a default
 * export of that shape.
 */
export class ProviderRegistry {
  readonly #entries = new Map<string, RegistryEntry>();
  readonly #imported = new Map<string, Promise<RegistryEntry>>();

  constructor(entries: ReadonlyMap<string, RegistryEntry> = builtinProviders()) {
    for (const [type, e] of entries) this.#entries.set(type, e);
  }

  /** Registers a module under its type (tests register the reference `memory` provider this way). */
  register<C, D extends ProviderDeps>(
    module: ProviderModule<C, D>,
    deps?: (name: string) => Record<string, unknown>,
  ): this {
    if (!isModule(module)) throw new TypeError('register: not a ProviderModule');
    this.#entries.set(module.type, { module: module as unknown as AnyProviderModule, deps });
    return this;
  }

  /** The registered types. */
  types(): string[] {
    return [...this.#entries.keys()];
  }

  #known(): string {
    return [...new Set([...this.types(), ...Object.keys(FIRST_PARTY_PROVIDERS)])].join(', ');
  }

  /** The entry for `type`; rejects with a message naming the type when it cannot be loaded. */
  async resolve(type: string, baseDir: string): Promise<RegistryEntry> {
    const known = this.#entries.get(type);
    if (known !== undefined) return known;
    const firstParty = FIRST_PARTY_PROVIDERS[type];
    if (firstParty !== undefined) return this.#firstParty(type, firstParty, baseDir);
    const isPath = type.startsWith('./') || type.startsWith('../') || isAbsolute(type);
    if (!isPath && !PACKAGE_NAME.test(type)) {
      throw new Error(
        `unknown provider type "${type}"; use one of ${this.#known()} or an npm package name`,
      );
    }
    const spec = isPath ? pathToFileURL(resolve(baseDir, type)).href : type;
    let p = this.#imported.get(spec);
    if (p === undefined) {
      p = (async () => {
        let mod: Record<string, unknown>;
        try {
          mod = (await importFrom(spec, isPath, baseDir)) as Record<string, unknown>;
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code === 'ERR_MODULE_NOT_FOUND' && !isPath && !type.includes('/')) {
            throw new Error(
              `unknown provider type "${type}": not one of ${this.#known()}, and no installed npm package has that name`,
            );
          }
          throw new Error(
            `cannot load provider type "${type}": ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
          );
        }
        return { module: moduleOf(mod, type) };
      })();
      this.#imported.set(spec, p);
      p.catch(() => this.#imported.delete(spec));
    }
    return p;
  }

  /** A first-party type by its short name: its package when installed, else an error naming it. */
  #firstParty(type: string, pkg: string, baseDir: string): Promise<RegistryEntry> {
    let p = this.#imported.get(pkg);
    if (p === undefined) {
      p = (async () => {
        let mod: Record<string, unknown>;
        try {
          mod = (await importFrom(pkg, false, baseDir)) as Record<string, unknown>;
        } catch (err) {
          if (packageMissing(err, pkg)) {
            throw new Error(
              `provider type "${type}" comes from the package ${pkg}, which is not installed: run "npm install ${pkg}" beside the operator (the container image has it)`,
            );
          }
          throw new Error(
            `cannot load provider type "${type}" from ${pkg}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
          );
        }
        const m = moduleOf(mod, pkg);
        if (m.type !== type) {
          throw new Error(`${pkg} exports a provider module of type "${m.type}", not "${type}"`);
        }
        return { module: m };
      })();
      this.#imported.set(pkg, p);
      p.catch(() => this.#imported.delete(pkg));
    }
    return p;
  }
}

/** Whether `err` says that `pkg` itself (not one of its dependencies) is not installed. */
function packageMissing(err: unknown, pkg: string): boolean {
  const code = (err as { code?: string }).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return (err as Error).message.includes(`'${pkg}'`) || (err as Error).message.includes(`"${pkg}"`);
}

/** The module a provider package exports: `providerModule`, or a default export of that shape. */
function moduleOf(mod: Record<string, unknown>, type: string): AnyProviderModule {
  const m = mod.providerModule ?? mod.default;
  if (!isModule(m)) {
    throw new Error(
      `"${type}" does not export a provider module (providerModule or default with type, configSchema, profile, classify, create)`,
    );
  }
  return m;
}

/**
 * Imports a provider module: a path as is; a package name from the
 * operator's own installation first, then from the providers file's folder
 * (so a package installed next to the file is found by a global `proxy-op`).
 */
async function importFrom(spec: string, isPath: boolean, baseDir: string): Promise<unknown> {
  if (isPath) return import(spec);
  try {
    return await import(spec);
  } catch (err) {
    let resolved: string;
    try {
      resolved = createRequire(join(baseDir, 'providers.yaml')).resolve(spec);
    } catch {
      throw err;
    }
    return import(pathToFileURL(resolved).href);
  }
}

/** One provider entry of a valid providers file. */
export interface ProviderEntry {
  readonly name: string;
  /** As written: a registered type, an npm package name or a path. */
  readonly type: string;
  /** The module's own type (the key of the block). */
  readonly moduleType: string;
  readonly entry: RegistryEntry;
  /** The block as written (validated by the module's schema). */
  readonly block: unknown;
}

/** A valid providers file. */
export interface ProvidersConfig {
  /** The installation id (default `default`). */
  readonly installation: string;
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
        if (k !== 'name' && k !== 'type' && k !== moduleType) {
          problems.push(
            `${at}.${k}: unknown field; the ${moduleType} block goes under "${moduleType}"`,
          );
        }
      }
      for (const p of profileProblems(entry.module.profile)) {
        problems.push(`${at}.type: module ${moduleType} has an invalid profile: ${p}`);
      }
      const block = o[moduleType];
      const result = await entry.module.configSchema['~standard'].validate(block);
      if (result.issues !== undefined) {
        problems.push(...formatConfigIssues(result.issues, `${at}.${moduleType}`));
      }
      if (typeof name === 'string') entries.push({ name, type: o.type, moduleType, entry, block });
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

/** A built provider and where it came from. */
export interface ConfiguredProvider {
  readonly name: string;
  readonly type: string;
  readonly provider: Provider;
  readonly module: AnyProviderModule;
  readonly fingerprint: string;
}

/** What changed when a providers config was applied. */
export interface ProvidersChange {
  readonly added: readonly string[];
  readonly rebuilt: readonly string[];
  readonly removed: readonly string[];
  readonly kept: readonly string[];
  readonly installationChanged: boolean;
}

/**
 * The configured providers, built. `apply` takes a new valid config and
 * rebuilds only the providers whose type or block changed; the others keep
 * their objects (and connections).
 */
export class ProviderSet {
  #providers = new Map<string, ConfiguredProvider>();
  #installation = DEFAULT_INSTALLATION;
  readonly #deps: ProviderDeps;
  readonly #log: Logger;

  constructor(deps: ProviderDeps = {}) {
    this.#deps = deps;
    this.#log = deps.logger ?? silentLogger;
  }

  /** The installation id of the current config. */
  get installation(): string {
    return this.#installation;
  }

  /** The provider named `name`, or undefined when none is configured. */
  get(name: string): ConfiguredProvider | undefined {
    return this.#providers.get(name);
  }

  /** Every configured provider, in config order. */
  list(): ConfiguredProvider[] {
    return [...this.#providers.values()];
  }

  /** Applies a valid config. A provider that fails to build is left out and reported in the result's problems. */
  async apply(config: ProvidersConfig): Promise<ProvidersChange & { problems: string[] }> {
    const next = new Map<string, ConfiguredProvider>();
    const added: string[] = [];
    const rebuilt: string[] = [];
    const kept: string[] = [];
    const problems: string[] = [];
    const toClose: ConfiguredProvider[] = [];
    for (const p of config.providers) {
      const fingerprint = `${p.type}\n${canonicalJson(p.block ?? null)}`;
      const old = this.#providers.get(p.name);
      if (old !== undefined && old.fingerprint === fingerprint) {
        next.set(p.name, old);
        kept.push(p.name);
        continue;
      }
      try {
        const deps = { ...this.#deps, ...(p.entry.deps?.(p.name) ?? {}) } as ProviderDeps;
        const provider = await createProvider(p.entry.module, p.name, p.block, deps);
        next.set(p.name, {
          name: p.name,
          type: p.moduleType,
          provider,
          module: p.entry.module,
          fingerprint,
        });
        (old === undefined ? added : rebuilt).push(p.name);
        if (old !== undefined) toClose.push(old);
      } catch (err) {
        problems.push(`${p.name}: ${(err as Error).message}`);
        if (old !== undefined) toClose.push(old);
      }
    }
    const removed: string[] = [];
    for (const [name, old] of this.#providers) {
      if (!next.has(name)) {
        removed.push(name);
        if (!toClose.includes(old)) toClose.push(old);
      }
    }
    const installationChanged = config.installation !== this.#installation;
    this.#installation = config.installation;
    this.#providers = next;
    for (const old of toClose) {
      await old.provider.close?.().catch((err: unknown) => {
        this.#log.warn({ provider: old.name, err: String(err) }, 'closing a provider failed');
      });
    }
    return { added, rebuilt, removed, kept, installationChanged, problems };
  }

  /** Closes every provider. */
  async close(): Promise<void> {
    const all = this.list();
    this.#providers = new Map();
    await Promise.all(all.map((p) => p.provider.close?.().catch(() => {})));
  }
}

/**
 * Watches a providers file and calls `onChange` when its content changes
 * (stat polling, which also sees a Kubernetes ConfigMap's symlink swap).
 * Returns the stop function.
 */
export function watchProvidersFile(
  path: string,
  onChange: () => void,
  intervalMs = 2000,
): () => void {
  const listener = (cur: { mtimeMs: number; size: number; ino: number }, prev: typeof cur) => {
    if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size || cur.ino !== prev.ino) onChange();
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return () => unwatchFile(path, listener);
}

/**
 * The providers config used when there is no providers file, or the file
 * lists no provider: the file's installation (default `default`) and one
 * provider named `local` of the built-in type `local`, with its defaults.
 */
export async function defaultProvidersConfig(
  registry: ProviderRegistry,
  installation: string = DEFAULT_INSTALLATION,
): Promise<ProvidersConfig> {
  const entry = await registry.resolve(DEFAULT_PROVIDER, process.cwd());
  return {
    installation,
    providers: [
      {
        name: DEFAULT_PROVIDER,
        type: DEFAULT_PROVIDER,
        moduleType: entry.module.type,
        entry,
        block: undefined,
      },
    ],
  };
}

/**
 * The state folder the standalone operator gives a `local` provider whose
 * block sets no `stateDir`: beside the state file, named after it and the
 * provider (`proxies.state.json` and provider `local` give
 * `proxies.state.local/`).
 */
export function localStateDir(stateFile: string, provider: string): string {
  const abs = resolve(stateFile);
  return join(dirname(abs), `${basename(abs).replace(/\.json$/, '')}.${provider}`);
}

/**
 * The providers a standalone operator runs with: `config` itself, or
 * {@link defaultProvidersConfig} when it lists no provider; and every
 * `local` provider without a `stateDir` keeps its instances beside the
 * state file ({@link localStateDir}), so operators with different state
 * files never share (or garbage-collect) each other's processes.
 */
export async function standaloneProviders(
  config: ProvidersConfig | undefined,
  registry: ProviderRegistry,
  stateFile: string,
): Promise<ProvidersConfig> {
  const base =
    config === undefined || config.providers.length === 0
      ? await defaultProvidersConfig(registry, config?.installation)
      : config;
  return {
    installation: base.installation,
    providers: base.providers.map((p) => {
      if (p.moduleType !== localProviderModule.type) return p;
      const block = (p.block ?? {}) as Record<string, unknown>;
      if (typeof block !== 'object' || block.stateDir !== undefined) return p;
      return { ...p, block: { ...block, stateDir: localStateDir(stateFile, p.name) } };
    }),
  };
}
