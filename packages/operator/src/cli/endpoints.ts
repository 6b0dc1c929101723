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
import { defaultStateFile, endpointsDir } from '../standalone/state-file.js';
import { proxyKey } from '../store/proxies.js';
import { UsageError } from './args.js';

const USAGE =
  'usage: proxy-op endpoints POOL [-n NAMESPACE] [--plain] (--standalone DIR [--state FILE] | [--kubeconfig FILE] [--context NAME])\n\nPrints the pool’s verified endpoints, one URL per line, with their credentials unless --plain. Keep them out of logs and shell history.\n';

/** Runs `proxy-op endpoints`; resolves with the exit code. */
export async function endpoints(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n', default: 'default' },
      plain: { type: 'boolean', default: false },
      standalone: { type: 'string' },
      state: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
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
  const ns = values.namespace;
  let text: string | undefined;
  if (values.standalone !== undefined) {
    const file = endpointsFile(
      endpointsDir(values.state ?? defaultStateFile(values.standalone)),
      proxyKey(ns, name),
    );
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
    const { KubeClient } = await import('../kube/client.js');
    const { getOrNothing } = await import('../kube/upsert.js');
    const client = await KubeClient.load({
      kubeconfig: values.kubeconfig,
      context: values.context,
    });
    try {
      const kind = values.plain ? 'configmaps' : 'secrets';
      const o = await getOrNothing<{ data?: Record<string, string> }>(
        client,
        `reading the endpoints of ProxyPool ${ns}/${name}`,
        `/api/v1/namespaces/${ns}/${kind}/${name}-endpoints`,
      );
      const raw = o?.data?.endpoints;
      text =
        raw === undefined
          ? undefined
          : values.plain
            ? raw
            : Buffer.from(raw, 'base64').toString('utf8');
    } finally {
      client.close();
    }
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
