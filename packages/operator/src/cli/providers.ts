/**
 * The CLI's providers file: which file is read (`--providers FILE`, else
 * `providers.yaml` when it exists, else none and the built-in `local`
 * provider), its problems printed, and its reloads applied to a running
 * operator.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import type { Logger } from '@proxy-op/contract';
import { DEFAULTS } from '../defaults.js';
import { DEFAULT_PROVIDER } from '../providers/default.js';
import {
  type FileStamp,
  fileStamp,
  loadProvidersFile,
  type ProvidersConfig,
  watchProvidersFile,
} from '../providers/file.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { Operator } from '../proxy/controller.js';

/** The providers file's outcome: its config (undefined when there is no file), or invalid. */
export type ProvidersRead =
  | {
      readonly ok: true;
      readonly file: string;
      readonly config: ProvidersConfig | undefined;
      /** The file's stamp, taken before it was read. */
      readonly stamp: FileStamp;
    }
  | { readonly ok: false; readonly file: string; readonly problems: readonly string[] };

/**
 * Reads the providers file: `--providers FILE` must exist; without the flag,
 * `providers.yaml` in the current folder is read when it exists, and its
 * absence means "no file" (the built-in `local` provider then applies).
 */
export async function readProviders(
  explicit: string | undefined,
  registry: ProviderRegistry,
): Promise<ProvidersRead> {
  const file = explicit ?? DEFAULTS.providersFile;
  const stamp = await fileStamp(file);
  if (explicit === undefined && !existsSync(file)) {
    return { ok: true, file, config: undefined, stamp };
  }
  const load = await loadProvidersFile(file, registry);
  return load.ok
    ? { ok: true, file, config: load.config, stamp }
    : { ok: false, file, problems: load.problems };
}

/** {@link readProviders}, printing the problems of an invalid file on stderr (then undefined). */
export async function loadProviders(
  explicit: string | undefined,
  registry: ProviderRegistry,
): Promise<Extract<ProvidersRead, { ok: true }> | undefined> {
  const read = await readProviders(explicit, registry);
  if (!read.ok) {
    process.stderr.write(`${read.file}: invalid providers file:\n`);
    for (const p of read.problems) process.stderr.write(`  ${p}\n`);
    return undefined;
  }
  return read;
}

/** Logs that the built-in provider is used, when the file is absent or lists none. */
export function logDefaultProvider(
  logger: Logger,
  read: Extract<ProvidersRead, { ok: true }>,
  fields: Record<string, unknown> = {},
): void {
  if (read.config !== undefined && read.config.providers.length > 0) return;
  logger.info(
    { provider: DEFAULT_PROVIDER, ...fields },
    `${read.config === undefined ? `no providers file (${read.file})` : `${read.file} lists no provider`}: using the built-in "${DEFAULT_PROVIDER}" provider`,
  );
}

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
