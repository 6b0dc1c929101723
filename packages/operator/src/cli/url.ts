/**
 * `proxy-op url NAME`: the one command that prints a Proxy's URL with its
 * credential (`http://user:pass@ip:port`), for a client to use: from the
 * standalone credential file (`--standalone DIR`) or from the Proxy's
 * Secret on Kubernetes. Nothing else the operator prints carries it.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { FileCredentialStore } from '../standalone/credentials.js';
import { credentialsDir } from '../standalone/providers.js';
import { UsageError } from './args.js';
import { fileCredential, secretCredential } from './credential.js';
import { TARGET_OPTIONS, targetOf, withCluster } from './target.js';

const USAGE =
  'usage: proxy-op url NAME [-n NAMESPACE] (--standalone DIR [--state FILE] | [--kubeconfig FILE] [--context NAME])\n\nPrints the Proxy’s URL with its credential (http://user:pass@ip:port). Keep it out of logs and shell history.\n';

/** Runs `proxy-op url`; resolves with the exit code. */
export async function url(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...TARGET_OPTIONS, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [name, ...extra] = positionals;
  if (name === undefined || extra.length > 0) throw new UsageError(`name one Proxy\n\n${USAGE}`);
  const where = targetOf(values);
  const namespace = where.namespace;
  let found: string | undefined;
  if (where.kind === 'standalone') {
    const path = new FileCredentialStore(credentialsDir(where.stateFile)).locate({
      namespace,
      name,
      uid: '',
    });
    const kept = await fileCredential(path);
    if (kept === undefined) {
      process.stderr.write(
        `proxy-op url: Proxy ${namespace}/${name} has no credential in ${path} (no such Proxy, auth type none, or a secretRef)\n`,
      );
      return 1;
    }
    found = kept.url;
  } else {
    const { credentialSecretName } = await import('../kube/credentials.js');
    found = await withCluster(
      where,
      async (client) =>
        (await secretCredential(client, namespace, credentialSecretName(name)))?.url,
    );
  }
  if (found === undefined) {
    process.stderr.write(
      `proxy-op url: Proxy ${namespace}/${name} has a credential but no endpoint yet; wait until it is Ready\n`,
    );
    return 1;
  }
  process.stdout.write(`${found}\n`);
  return 0;
}
