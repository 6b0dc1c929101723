/**
 * The configured providers, built from a valid providers config and kept
 * across reloads: only a provider whose type or block changed is rebuilt.
 *
 * @module
 */
import {
  createProvider,
  DEFAULT_INSTALLATION,
  type Logger,
  type Provider,
  type ProviderDeps,
  silentLogger,
} from '@proxy-op/contract';
import { canonicalJson } from '../api/canonical-json.js';
import {
  DEFAULT_PROBE_SETTINGS,
  type ProbeSettings,
  sameProbeSettings,
} from '../probe/settings.js';
import type { ProvidersConfig } from './file.js';
import { type ProviderPrice, samePrice } from './price.js';
import type { AnyProviderModule } from './registry.js';

/** A built provider and where it came from. */
export interface ConfiguredProvider {
  /** The provider's configured name. */
  readonly name: string;
  /** Its type as the providers file writes it. */
  readonly type: string;
  /** The provider, built. */
  readonly provider: Provider;
  /** The module it was built from. */
  readonly module: AnyProviderModule;
  /** Its type and block as canonical JSON: a provider is rebuilt when this changes. */
  readonly fingerprint: string;
  /** How its proxies are probed (a change of it rebuilds nothing). */
  readonly probe: ProbeSettings;
  /** What one instance costs per hour, from the providers file (a change of it rebuilds nothing). */
  readonly price?: ProviderPrice | undefined;
}

/** What changed when a providers config was applied. */
export interface ProvidersChange {
  /** Providers that are new. */
  readonly added: readonly string[];
  /** Providers whose type or block changed, built anew. */
  readonly rebuilt: readonly string[];
  /** Providers no longer configured. */
  readonly removed: readonly string[];
  /** Providers left as they were (objects and connections kept). */
  readonly kept: readonly string[];
  /** Kept providers whose `probe` settings changed. */
  readonly probeChanged: readonly string[];
  /** True when the installation id changed. */
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
    const probeChanged: string[] = [];
    const problems: string[] = [];
    const toClose: ConfiguredProvider[] = [];
    for (const p of config.providers) {
      const fingerprint = `${p.type}\n${canonicalJson(p.block ?? null)}`;
      const old = this.#providers.get(p.name);
      const probe = p.probe ?? DEFAULT_PROBE_SETTINGS;
      if (old !== undefined && old.fingerprint === fingerprint) {
        const sameProbe = sameProbeSettings(old.probe, probe);
        if (sameProbe && samePrice(old.price, p.price)) next.set(p.name, old);
        else next.set(p.name, { ...old, probe, price: p.price });
        if (!sameProbe) probeChanged.push(p.name);
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
          probe,
          price: p.price,
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
    return { added, rebuilt, removed, kept, probeChanged, installationChanged, problems };
  }

  /** Closes every provider. */
  async close(): Promise<void> {
    const all = this.list();
    this.#providers = new Map();
    await Promise.all(all.map((p) => p.provider.close?.().catch(() => {})));
  }
}
