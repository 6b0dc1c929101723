/**
 * The providers file followed while the operator runs: each valid version
 * applied, one at a time; an invalid one logged and the providers in use
 * kept.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { type FileStamp, type ProvidersConfig, watchProvidersFile } from '../providers/file.js';
import { readProviders } from '../providers/read.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { Operator } from './operator.js';

/**
 * Watches the providers file and applies each valid version to the operator,
 * one reload at a time; an invalid version is logged and the providers in
 * use are kept. `settled` resolves once the reloads begun have finished.
 */
export function reloadProvidersOnChange(o: {
  file: string;
  /** The stamp of the version in use, so a change before the first poll is seen. */
  since: FileStamp;
  explicit: string | undefined;
  registry: ProviderRegistry;
  operator: Operator;
  logger: Logger;
  pollMs: number | undefined;
  build: (config: ProvidersConfig | undefined) => Promise<ProvidersConfig>;
}): { stopWatching(): void; settled(): Promise<void> } {
  let reloading = Promise.resolve();
  const stopWatching = watchProvidersFile(
    o.file,
    () => {
      reloading = reloading.then(async () => {
        const again = await readProviders(o.explicit, o.registry);
        if (!again.ok) {
          o.logger.error(
            { problems: again.problems },
            'providers file is invalid; keeping the old one',
          );
          return;
        }
        await o.operator
          .applyProviders(await o.build(again.config))
          .catch((err: unknown) =>
            o.logger.error({ err: (err as Error).message }, 'applying the providers file failed'),
          );
      });
    },
    o.pollMs,
    o.since,
  );
  return { stopWatching, settled: () => reloading };
}
