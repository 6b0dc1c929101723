/**
 * `proxy-op whoami`: the probe target on its own, for a provider whose
 * proxies cannot reach the operator (a VM in a cloud): run it where they
 * can, and name it in the providers file (`probe: { url: ... }`). It serves
 * until SIGINT or SIGTERM.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startWhoami } from '@proxy-op/probe';
import { parseListenAddress } from '../process/listen.js';
import { UsageError } from './args.js';

const HELP = `usage: proxy-op whoami [--listen HOST:PORT] [--tls-listen HOST:PORT|off]
                       [--cert FILE --key FILE]

Serves the probe target until SIGINT or SIGTERM: GET ...?nonce=N answers the
nonce and the source address it saw, over HTTP and HTTPS (a self-signed
certificate unless --cert and --key name one). Defaults: --listen :8080,
--tls-listen :8443.
`;

/** Runs `proxy-op whoami`; resolves with the exit code once stopped. */
export async function whoami(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      listen: { type: 'string', default: ':8080' },
      'tls-listen': { type: 'string', default: ':8443' },
      cert: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if ((values.cert === undefined) !== (values.key === undefined)) {
    throw new UsageError('--cert and --key go together');
  }
  const http = parseListenAddress(values.listen);
  const off = values['tls-listen'] === 'off';
  const tls = off ? undefined : parseListenAddress(values['tls-listen']);
  const pair =
    values.cert === undefined || values.key === undefined
      ? {}
      : { cert: await readFile(values.cert, 'utf8'), key: await readFile(values.key, 'utf8') };
  const w = await startWhoami({
    host: http.host,
    port: http.port,
    tls: tls === undefined ? false : { host: tls.host, port: tls.port, ...pair },
  });
  process.stdout.write(
    `serving ${w.http.href}${w.https === undefined ? '' : ` and ${w.https.href} (certificate ${w.fingerprint256})`}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await w.close();
  return 0;
}
