/**
 * The `proxy-op` command's entry: `main` runs one command line and resolves
 * with its exit code; nothing runs at import. The package's `bin` script
 * calls it. See the package README for every command and flag.
 *
 * @module
 */
import { UsageError } from './args.js';
import { ban } from './ban.js';
import { check } from './check.js';
import { crds } from './crds.js';
import { endpoints } from './endpoints.js';
import { gateway } from './gateway.js';
import { help, USAGE } from './help.js';
import { probeCommand } from './probe.js';
import { run } from './run.js';
import { status } from './status.js';
import { url } from './url.js';
import { validate } from './validate.js';
import { whoami } from './whoami.js';

/** Runs the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await run(rest);
      case 'down':
        return await run(rest, 'down');
      case 'check':
        return await check(rest);
      case 'validate':
        return await validate(rest);
      case 'status':
        return await status(rest);
      case 'crds':
        return await crds();
      case 'probe':
        return await probeCommand(rest);
      case 'url':
        return await url(rest);
      case 'ban':
        return await ban(rest);
      case 'endpoints':
        return await endpoints(rest);
      case 'gateway':
        return await gateway(rest);
      case 'whoami':
        return await whoami(rest);
      case 'help':
      case '--help':
      case '-h':
        return await help();
      default:
        process.stderr.write(
          command === undefined ? USAGE : `unknown command "${command}"\n\n${USAGE}`,
        );
        return 2;
    }
  } catch (err) {
    if (
      UsageError.isInstance(err) ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`proxy-op ${command}: ${(err as Error).message}\n`);
      return 2;
    }
    process.stderr.write(`proxy-op ${command}: ${(err as Error).message}\n`);
    return 1;
  }
}
