/**
 * Provider types resolved to provider modules: the built-in `local`, the
 * first-party short names (loaded from their packages when installed),
 * types registered in code, and npm package names or paths imported on
 * demand.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ProviderDeps, ProviderModule } from '@proxy-op/contract';
import { providerModule as localProviderModule } from '@proxy-op/provider-local';

/** A provider module of any config type. */
export type AnyProviderModule = ProviderModule<unknown, ProviderDeps>;

/** One way to build providers of a type: the module and any extra dependencies it needs. */
export interface RegistryEntry {
  /** The provider module. */
  readonly module: AnyProviderModule;
  /** Extra dependencies for `module.create` (a backend handle, a client), per provider name. */
  readonly deps?: ((name: string) => Record<string, unknown>) | undefined;
}

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
  hetzner: '@proxy-op/provider-hetzner',
  aws: '@proxy-op/provider-aws',
  kubernetes: '@proxy-op/provider-kubernetes',
});

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
    return this.#once(spec, async () => {
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
    });
  }

  /** A first-party type by its short name: its package when installed, else an error naming it. */
  #firstParty(type: string, pkg: string, baseDir: string): Promise<RegistryEntry> {
    return this.#once(pkg, async () => {
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
    });
  }

  /** Imports `spec` once (`load`); a failed import is forgotten, so a later resolve tries again. */
  #once(spec: string, load: () => Promise<RegistryEntry>): Promise<RegistryEntry> {
    let p = this.#imported.get(spec);
    if (p === undefined) {
      p = load();
      this.#imported.set(spec, p);
      p.catch(() => this.#imported.delete(spec));
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
