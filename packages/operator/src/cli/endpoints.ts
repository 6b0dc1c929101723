/**
 * `proxy-op endpoints POOL`: a ProxyPool's verified endpoints, one URL per
 * line, each with its Proxy's credential (`--plain` leaves them out): the
 * pool's endpoint file in standalone mode, its `<pool>-endpoints` Secret (or
 * ConfigMap, with `--plain`) on Kubernetes.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { endpointsFile } from '../standalone/pools.js';
import { endpointsDir } from '../standalone/state-file.js';
import { proxyKey } from '../store/proxies.js';
import { UsageError } from './args.js';
import { TARGET_OPTIONS, targetOf, withCluster } from './target.js';

const USAGE =
  'usage: proxy-op endpoints POOL [-n NAMESPACE] [--plain] (--standalone DIR [--state FILE] | [--kubeconfig FILE] [--context NAME])\n\nPrints the pool’s verified endpoints, one URL per line, with their credentials unless --plain. Keep them out of logs and shell history.\n';

/** Runs `proxy-op endpoints`; resolves with the exit code. */
export async function endpoints(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...TARGET_OPTIONS,
      plain: { type: 'boolean', default: false },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [name, ...extra] = positionals;
  if (name === undefined || extra.length > 0)
    throw new UsageError(`name one ProxyPool\n\n${USAGE}`);
  const where = targetOf(values);
  const ns = where.namespace;
  let text: string | undefined;
  if (where.kind === 'standalone') {
    const file = endpointsFile(endpointsDir(where.stateFile), proxyKey(ns, name));
    text = await readFile(file, 'utf8').catch(() => undefined);
    if (text !== undefined && values.plain) {
      text = text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const u = new URL(l);
          return `${u.protocol}//${u.host}\n`;
        })
        .join('');
    }
  } else {
    const { getOrNothing } = await import('../kube/upsert.js');
    text = await withCluster(where, async (client) => {
      const kind = values.plain ? 'configmaps' : 'secrets';
      const o = await getOrNothing<{ data?: Record<string, string> }>(
        client,
        `reading the endpoints of ProxyPool ${ns}/${name}`,
        `/api/v1/namespaces/${ns}/${kind}/${name}-endpoints`,
      );
      const raw = o?.data?.endpoints;
      if (raw === undefined) return undefined;
      return values.plain ? raw : Buffer.from(raw, 'base64').toString('utf8');
    });
  }
  if (text === undefined) {
    process.stderr.write(
      `proxy-op endpoints: ProxyPool ${ns}/${name} has published no endpoints (no such pool, or none verified yet)\n`,
    );
    return 1;
  }
  process.stdout.write(text);
  return 0;
}
