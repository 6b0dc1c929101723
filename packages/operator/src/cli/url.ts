/**
 * `proxy-op url NAME`: the one command that prints a Proxy's URL with its
 * credential (`http://user:pass@ip:port`), for a client to use: from the
 * standalone credential file (`--standalone DIR`) or from the Proxy's
 * Secret on Kubernetes. Nothing else the operator prints carries it.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { formatUserName, parseUserParams, type UserParams } from '@proxy-op/forward-proxy';
import { FileCredentialStore } from '../standalone/credentials.js';
import { credentialsDir } from '../standalone/providers.js';
import { UsageError } from './args.js';
import { fileCredential, secretCredential } from './credential.js';
import { TARGET_OPTIONS, targetOf, withCluster } from './target.js';

const USAGE = `usage: proxy-op url NAME [-n NAMESPACE] (--standalone DIR [--state FILE] | [--kubeconfig FILE] [--context NAME])
       proxy-op url POOL --pool [--session ID [--ttl DURATION] | --rotate request|connection]
                    [--country CC] [--region REGION] [--provider NAME] [--socks] [target flags]

Prints the Proxy's URL with its credential (http://user:pass@ip:port), or with --pool
the URL of the ProxyPool's gateway, its user name carrying the session, rotation and
filters asked for (USER-session-ID-country-de...); --socks prints the SOCKS5 form
(socks5h://). Keep it out of logs and shell history.
`;

/** Runs `proxy-op url`; resolves with the exit code. */
export async function url(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...TARGET_OPTIONS,
      help: { type: 'boolean' },
      pool: { type: 'boolean' },
      socks: { type: 'boolean' },
      session: { type: 'string' },
      ttl: { type: 'string' },
      rotate: { type: 'string' },
      country: { type: 'string' },
      region: { type: 'string' },
      provider: { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [name, ...extra] = positionals;
  const what = values.pool ? 'ProxyPool' : 'Proxy';
  if (name === undefined || extra.length > 0) throw new UsageError(`name one ${what}\n\n${USAGE}`);
  const params = paramsOf(values);
  const where = targetOf(values);
  const namespace = where.namespace;
  let found: string | undefined;
  if (where.kind === 'standalone') {
    const path = new FileCredentialStore(credentialsDir(where.stateFile)).locate({
      namespace,
      // A pool's gateway keeps its credential as the pseudo-Proxy POOL.gateway.
      name: values.pool ? `${name}.gateway` : name,
      uid: '',
    });
    const kept = await fileCredential(path);
    if (kept === undefined) {
      process.stderr.write(
        values.pool
          ? `proxy-op url: ProxyPool ${namespace}/${name} has no gateway credential in ${path} (no such pool, no gateway, or its auth is none)\n`
          : `proxy-op url: Proxy ${namespace}/${name} has no credential in ${path} (no such Proxy, auth type none, or a secretRef)\n`,
      );
      return 1;
    }
    found = kept.url;
  } else {
    const { credentialSecretName } = await import('../kube/credentials.js');
    const secret = values.pool ? `${name}-gateway` : credentialSecretName(name);
    found = await withCluster(
      where,
      async (client) => (await secretCredential(client, namespace, secret))?.url,
    );
  }
  if (found === undefined) {
    process.stderr.write(
      `proxy-op url: ${what} ${namespace}/${name} has a credential but no endpoint yet; wait until it is Ready\n`,
    );
    return 1;
  }
  process.stdout.write(
    `${values.pool ? withParams(found, params, values.socks === true) : found}\n`,
  );
  return 0;
}

/** The user-name parameters the flags ask for; a usage error names a bad one. */
function paramsOf(v: {
  pool?: boolean | undefined;
  socks?: boolean | undefined;
  session?: string | undefined;
  ttl?: string | undefined;
  rotate?: string | undefined;
  country?: string | undefined;
  region?: string | undefined;
  provider?: string | undefined;
}): UserParams {
  const given = (['session', 'ttl', 'rotate', 'country', 'region', 'provider'] as const).filter(
    (k) => v[k] !== undefined,
  );
  if (!v.pool) {
    const flag = given[0] ?? (v.socks ? 'socks' : undefined);
    if (flag !== undefined) {
      throw new UsageError(`--${flag} applies to a pool's gateway; add --pool\n\n${USAGE}`);
    }
    return {};
  }
  // The gateway's own reading of a user name is the check: a flag it would refuse is refused here.
  const text = given.flatMap((k) => [k, String(v[k])]).join('-');
  const read = parseUserParams(text === '' ? undefined : text);
  if ('problem' in read) {
    const problem = read.problem
      .replace("the user name's parameter", 'the flag')
      .replace(/"(\w+)/, '"--$1');
    throw new UsageError(`${problem}\n\n${USAGE}`);
  }
  return read;
}

/** The gateway's URL with `params` in its user name, as SOCKS5 (`socks5h://`) when asked. */
function withParams(url: string, params: UserParams, socks: boolean): string {
  const u = new URL(url);
  const user = formatUserName(decodeURIComponent(u.username), params);
  const auth = `${encodeURIComponent(user)}:${u.password}@`;
  return `${socks ? 'socks5h' : 'http'}://${u.username === '' ? '' : auth}${u.host}`;
}
