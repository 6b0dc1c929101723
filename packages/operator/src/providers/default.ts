/**
 * The provider the operator uses when no providers file configures any:
 * `local`, which runs each proxy as a process on this machine.
 *
 * @module
 */
import { DEFAULT_INSTALLATION } from '@proxy-op/contract';
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
