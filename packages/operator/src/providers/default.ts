import { DEFAULT_INSTALLATION } from '@proxy-op/contract';
import { providerModule as localProviderModule } from '@proxy-op/provider-local';
import { besideStateFile } from '../standalone/state-file.js';
import type { ProvidersConfig } from './file.js';
import type { ProviderRegistry } from './registry.js';

/** The name (and type) of the provider used when no providers file configures any. */
export const DEFAULT_PROVIDER = 'local';

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
