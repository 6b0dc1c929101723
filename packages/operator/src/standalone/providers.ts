/**
 * The providers of a standalone operator: the file's, or the built-in
 * `local` one, each `local` provider keeping its instances beside the
 * state file.
 *
 * @module
 */
import { providerModule as localProviderModule } from '@proxy-op/provider-local';
import { defaultProvidersConfig } from '../providers/default.js';
import type { ProvidersConfig } from '../providers/file.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { besideStateFile } from './state-file.js';

/**
 * The state folder the standalone operator gives a `local` provider whose
 * block sets no `stateDir`: beside the state file, named after it and the
 * provider (`proxies.state.json` and provider `local` give
 * `proxies.state.local/`).
 */
export function localStateDir(stateFile: string, provider: string): string {
  return besideStateFile(stateFile, provider);
}

/** Where a standalone operator keeps the Proxies' credentials: `DIR.state.credentials.d` beside the state file. */
export function credentialsDir(stateFile: string): string {
  return localStateDir(stateFile, 'credentials.d');
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
