/**
 * The providers file a command reads: `--providers FILE`, else
 * `providers.yaml` when it exists, else none (the built-in `local`
 * provider), with its problems printed.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import type { Logger } from '@proxy-op/contract';
import { DEFAULTS } from '../defaults.js';
import { DEFAULT_PROVIDER } from './default.js';
import { type FileStamp, fileStamp, loadProvidersFile, type ProvidersConfig } from './file.js';
import type { ProviderRegistry } from './registry.js';

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
