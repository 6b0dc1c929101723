/**
 * `proxy-op probe NAME`: one probe through a Proxy's data plane, now, with
 * each step printed. The Proxy comes from the state file (`--standalone`)
 * or the cluster; the target is `--target`, else its provider's
 * `probe.url`, else a whoami target this command starts on loopback for
 * the probe (which only a proxy on this machine can reach).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { type ProbeResult, type ProbeTargetSpec, probe } from '@proxy-op/probe';
import { DEFAULTS } from '../defaults.js';
import { table } from '../page/live-table.js';
import { settingsTarget } from '../probe/settings.js';
import { type OwnProbeTarget, startProbeTarget } from '../probe/target.js';
import { readProviders } from '../providers/read.js';
import { ProviderRegistry } from '../providers/registry.js';
import { keptTarget } from '../standalone/probe-target.js';
import { readStateFile } from '../standalone/state-file.js';
import { proxyKey, splitKey } from '../store/proxies.js';
import { formatDuration, parseDuration, UsageError } from './args.js';
import { type CliCredential, fileCredential, secretCredential } from './credential.js';
import { TARGET_OPTIONS, type Target, targetOf, withCluster } from './target.js';

const HELP = `usage: proxy-op probe NAME [--namespace NS] [--standalone DIR [--state FILE]]
                      [--kubeconfig FILE] [--context NAME] [--providers FILE]
                      [--target URL [--get-target URL]] [--timeout ${formatDuration(DEFAULTS.probeTimeoutMs)}] [--json]

Probes the Proxy NAME through its data plane now (an absolute-form GET and a
CONNECT, each with a fresh nonce) and prints each step; exits 1 when a step
fails. The target is --target (the tunnel's; the GET's too when it is http:),
else the provider's probe.url in the providers file, else a whoami target
started on loopback for this probe. Without --standalone the Proxy is read
from the cluster of the kubeconfig.
`;

/** Prints a result as a table of steps and a last line; resolves with the exit code. */
function print(r: ProbeResult, json: boolean): number {
  if (json) {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    return r.ok ? 0 : 1;
  }
  const rows = [['CHECK', 'STEP', 'RESULT', 'MS', 'MESSAGE']];
  for (const s of r.steps) {
    rows.push([s.check, s.step, s.ok ? 'ok' : 'FAILED', s.ms.toFixed(1), s.message]);
  }
  const last = r.ok
    ? `passed in ${r.latency.totalMs.toFixed(1)} ms; the target saw ${r.egressIP ?? 'no address'}`
    : `failed at ${r.failure?.check}.${r.failure?.step}: ${r.failure?.message}`;
  process.stdout.write(`${table(rows)}\n\n${last}\n`);
  return r.ok ? 0 : 1;
}

/** The Proxy's endpoint and provider, from the state file or the cluster. */
async function findProxy(
  key: string,
  where: Target,
): Promise<{
  endpoint?: string | undefined;
  provider: string;
  phase?: string | undefined;
  credentials?: CliCredential | undefined;
}> {
  if (where.kind === 'standalone') {
    const state = await readStateFile(where.stateFile);
    const e = state.proxies[key];
    if (e === undefined) throw new UsageError(`no Proxy ${key} in the state file`);
    const file = e.status.credentials?.secretName;
    return {
      endpoint: e.status.endpoint,
      provider: e.spec.provider,
      phase: e.status.phase,
      credentials: file === undefined ? undefined : await fileCredential(file),
    };
  }
  const { proxyPath } = await import('../kube/raw.js');
  return withCluster(where, async (client) => {
    const o = await client.request<{
      spec: { provider: string };
      status?: { endpoint?: string; phase?: string; credentials?: { secretName?: string } };
    }>({ operation: `reading Proxy ${key}`, method: 'GET', path: proxyPath(key) });
    const secret = o.status?.credentials?.secretName;
    return {
      endpoint: o.status?.endpoint,
      provider: o.spec.provider,
      phase: o.status?.phase,
      credentials:
        secret === undefined
          ? undefined
          : await secretCredential(client, splitKey(key).namespace, secret),
    };
  });
}

/** Runs `proxy-op probe`; resolves with the exit code. */
export async function probeCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...TARGET_OPTIONS,
      providers: { type: 'string' },
      target: { type: 'string' },
      'get-target': { type: 'string' },
      timeout: { type: 'string', default: formatDuration(DEFAULTS.probeTimeoutMs) },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [name, ...more] = positionals;
  if (name === undefined || more.length > 0) throw new UsageError('probe takes one Proxy NAME');
  const key = proxyKey(values.namespace, name);
  const timeoutMs = parseDuration(values.timeout);
  const found = await findProxy(key, targetOf(values));
  if (found.endpoint === undefined) {
    process.stderr.write(`Proxy ${key} has no endpoint yet (phase ${found.phase ?? 'Pending'})\n`);
    return 1;
  }
  let target: ProbeTargetSpec | undefined;
  if (values.target !== undefined) {
    const url = values.target;
    if (!URL.canParse(url)) throw new UsageError(`--target: "${url}" is not a URL`);
    target = settingsTarget({
      enabled: true,
      url,
      getUrl: values['get-target'],
      maxUnhealthy: { count: 0 },
    });
  } else {
    const read = await readProviders(values.providers, new ProviderRegistry());
    const entry = read.ok
      ? read.config?.providers.find((p) => p.name === found.provider)
      : undefined;
    if (entry?.probe !== undefined) target = settingsTarget(entry.probe);
  }
  const where = targetOf(values);
  let own: OwnProbeTarget | undefined;
  if (target === undefined) {
    // Where the operator's own target served: the Proxies' policies let them reach it there.
    const kept = where.kind === 'standalone' ? await keptTarget(where.stateFile).read() : undefined;
    if (kept === undefined) {
      own = await startProbeTarget({
        listen: DEFAULTS.probeListen,
        tlsListen: DEFAULTS.probeTlsListen,
      });
    } else {
      const at = (url: string) => `${new URL(url).hostname}:${new URL(url).port}`;
      try {
        own = await startProbeTarget({
          listen: at(kept.http),
          tlsListen: kept.https === undefined ? 'off' : at(kept.https),
        });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
        // Its ports are taken: the operator serves it now (with a certificate of its own).
        const get = new URL(kept.http);
        const connect = kept.https === undefined ? get : new URL(kept.https);
        target = { get, connect, tls: { verify: false } };
      }
    }
  }
  try {
    const to = target ?? own?.target;
    if (to === undefined) return 1;
    process.stderr.write(
      `probing ${key} at ${found.endpoint} against ${String(to.connect ?? to.get)}\n`,
    );
    const c = found.credentials;
    const credentials =
      c === undefined ? undefined : { username: c.username, password: c.password };
    return print(await probe(found.endpoint, to, { timeoutMs, credentials }), values.json === true);
  } finally {
    await own?.close();
  }
}
