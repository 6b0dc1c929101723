/**
 * `proxy-op ban POOL MEMBER --host HOST --for DURATION`: reports to a
 * pool's gateway that `HOST` banned the Proxy `MEMBER` (as every answer
 * and tunnel names it), so the gateway keeps it from that host for
 * `DURATION`: what a client does for HTTPS, where the gateway sees no
 * answer. Standalone: the gateway's admin credential is read from beside
 * the state file, and never printed.
 *
 * @module
 */
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { FileCredentialStore } from '../standalone/credentials.js';
import { credentialsDir } from '../standalone/providers.js';
import { UsageError } from './args.js';
import { fileCredential } from './credential.js';
import { TARGET_OPTIONS, targetOf } from './target.js';

const USAGE = `usage: proxy-op ban POOL MEMBER --host HOST --for DURATION [-n NAMESPACE] --standalone DIR [--state FILE]

Tells the pool's gateway that HOST banned the Proxy MEMBER (the X-Proxy-Op-Upstream of an answer
or a tunnel): the gateway sends it nothing for HOST for DURATION (1s to 24h, as 30s, 10m, 2h).
The pool needs spec.bans (which gives its gateway the admin credential this command uses).
`;

/** Runs `proxy-op ban`; resolves with the exit code. */
export async function ban(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...TARGET_OPTIONS,
      host: { type: 'string' },
      for: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [pool, member, ...extra] = positionals;
  if (pool === undefined || member === undefined || extra.length > 0) {
    throw new UsageError(`name the pool and the member\n\n${USAGE}`);
  }
  if (values.host === undefined || values.for === undefined) {
    throw new UsageError(`give --host and --for\n\n${USAGE}`);
  }
  const where = targetOf(values);
  if (where.kind !== 'standalone') {
    throw new UsageError(
      `ban reaches the gateway of a standalone operator (--standalone DIR); on Kubernetes, POST /bans to the gateway's Service with its admin credential\n\n${USAGE}`,
    );
  }
  const path = new FileCredentialStore(credentialsDir(where.stateFile)).locate({
    namespace: where.namespace,
    name: `${pool}.gateway-admin`,
    uid: '',
  });
  const kept = await fileCredential(path);
  if (kept?.url === undefined) {
    process.stderr.write(
      `proxy-op ban: ProxyPool ${where.namespace}/${pool} has no gateway admin credential in ${path} (no such pool, no gateway, or no spec.bans)\n`,
    );
    return 1;
  }
  const at = new URL(kept.url);
  const query = new URLSearchParams({ upstream: member, host: values.host, for: values.for });
  const authorization = `Basic ${Buffer.from(`${kept.username}:${kept.password}`).toString('base64')}`;
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      {
        host: at.hostname.replace(/^\[|\]$/g, ''),
        port: at.port,
        method: 'POST',
        path: `/bans?${query}`,
        headers: { authorization, 'content-length': '0' },
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('the gateway did not answer within 10 s')));
    req.on('error', reject);
    req.end();
  }).catch((err: Error) => ({ status: 0, body: `${err.message}\n` }));
  if (answer.status === 200) {
    process.stdout.write(
      `gateway of ${where.namespace}/${pool}: ${member} kept from ${values.host} for ${values.for}\n`,
    );
    return 0;
  }
  process.stderr.write(
    `proxy-op ban: the gateway answered ${answer.status || 'nothing'}: ${answer.body}`,
  );
  return answer.status === 400 ? 2 : 1;
}
