/**
 * `proxy-op validate`: the providers file, and with `--standalone DIR` the
 * manifests, validated with every problem printed with its path.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { DEFAULT_PROVIDER } from '../providers/default.js';
import { loadProviders } from '../providers/read.js';
import { ProviderRegistry } from '../providers/registry.js';
import { validateManifestsDir } from '../standalone/manifests.js';

/** Runs `proxy-op validate`; resolves with the exit code (1 when there is a problem). */
export async function validate(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      providers: { type: 'string' },
      standalone: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: proxy-op validate [--providers FILE] [--standalone DIR]\n\nPrints every problem with its path; exits 1 when there is one.\n',
    );
    return 0;
  }
  let bad = false;
  const read = await loadProviders(values.providers, new ProviderRegistry());
  if (read === undefined) bad = true;
  else if (read.config === undefined) {
    process.stdout.write(
      `no ${read.file}: the built-in "${DEFAULT_PROVIDER}" provider (installation default)\n`,
    );
  } else {
    const { installation, providers } = read.config;
    process.stdout.write(
      `${read.file}: ok (installation ${installation}, ${providers.length} providers${providers.length === 0 ? `; the built-in "${DEFAULT_PROVIDER}" provider applies` : ''})\n`,
    );
  }
  if (values.standalone !== undefined) {
    const { count, problems, warnings } = await validateManifestsDir(values.standalone);
    for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
    if (problems.length > 0) {
      bad = true;
      process.stderr.write(`${values.standalone}: invalid manifests:\n`);
      for (const p of problems) process.stderr.write(`  ${p}\n`);
    } else process.stdout.write(`${values.standalone}: ok (${count} Proxies)\n`);
  }
  return bad ? 1 : 0;
}
