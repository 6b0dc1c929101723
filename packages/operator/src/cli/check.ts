/**
 * `proxy-op check`: every provider's Checker run once, a table (or JSON
 * lines) on stdout, exit code 1 when a target is not ready.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../defaults.js';
import { table } from '../page/live-table.js';
import { defaultProvidersConfig } from '../providers/default.js';
import { loadProviders } from '../providers/read.js';
import { ProviderRegistry } from '../providers/registry.js';
import { ProviderSet } from '../providers/set.js';
import { checkProvider } from '../proxy/health.js';
import { formatDuration, parseDuration } from './args.js';

/** Runs `proxy-op check`; resolves with the exit code. */
export async function check(argv: string[]): Promise<number> {
  const timeoutDefault = formatDuration(DEFAULTS.checkTimeoutMs);
  const { values } = parseArgs({
    args: argv,
    options: {
      providers: { type: 'string' },
      timeout: { type: 'string', default: timeoutDefault },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      `usage: proxy-op check [--providers FILE] [--timeout ${timeoutDefault}] [--json]\n\nRuns every Checker once and prints a table; exits 1 when a target is not ready.\n`,
    );
    return 0;
  }
  const timeout = parseDuration(values.timeout);
  const registry = new ProviderRegistry();
  const read = await loadProviders(values.providers, registry);
  if (read === undefined) return 2;
  const config =
    read.config !== undefined && read.config.providers.length > 0
      ? read.config
      : await defaultProvidersConfig(registry, read.config?.installation);
  const set = new ProviderSet();
  const applied = await set.apply(config);
  for (const p of applied.problems) process.stderr.write(`${p}\n`);
  const rows: string[][] = [['PROVIDER', 'TYPE', 'TARGET', 'READY', 'REASON', 'MESSAGE']];
  const json: unknown[] = [];
  let allReady = applied.problems.length === 0;
  const results = await Promise.all(
    set.list().map(async (cp) => ({ cp, results: await checkProvider(cp, timeout) })),
  );
  for (const { cp, results: rs } of results) {
    if (rs === undefined) {
      rows.push([cp.name, cp.type, '-', '-', 'NoChecker', 'the provider has no health check']);
      continue;
    }
    for (const r of rs) {
      if (!r.ready) allReady = false;
      rows.push([cp.name, cp.type, r.target, r.ready ? 'yes' : 'no', r.reason, r.message]);
      json.push({ provider: cp.name, type: cp.type, ...r });
    }
  }
  await set.close();
  process.stdout.write(
    values.json ? `${json.map((j) => JSON.stringify(j)).join('\n')}\n` : `${table(rows)}\n`,
  );
  return allReady ? 0 : 1;
}
