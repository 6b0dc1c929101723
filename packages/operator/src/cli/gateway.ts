/**
 * `proxy-op gateway`: one stable proxy address in front of a ProxyPool's
 * verified Proxies. It runs the forward proxy of `@proxy-op/forward-proxy`
 * with the pool's Proxies as its parents, and follows the pool's named
 * endpoint list while it runs: the standalone operator's
 * `NAMESPACE.NAME.upstreams.json`, or any such file (on Kubernetes, the
 * `upstreams.json` key of the pool's `<pool>-endpoints` Secret, mounted).
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Logger } from '@proxy-op/contract';
import { type EgressPolicy, egressPolicyProblems } from '@proxy-op/egress';
import {
  type BanOptions,
  checkBanRules,
  type ParentProxy,
  readParentsFile,
  type SessionPolicy,
  startForwardProxy,
  watchParentsFile,
} from '@proxy-op/forward-proxy';
import { createLogger } from '../process/log.js';
import { upstreamsFile } from '../standalone/pools.js';
import { endpointsDir } from '../standalone/state-file.js';
import { proxyKey } from '../store/proxies.js';
import { parseDuration, UsageError } from './args.js';
import { targetOf } from './target.js';

const USAGE = `usage: proxy-op gateway (POOL [-n NAMESPACE] --standalone DIR [--state FILE] | [POOL] --upstreams FILE)
    --listen ADDRESS:PORT --allowed-sources CIDR[,CIDR...]
    [--password-file FILE [--realm REALM]] [--session none|client|header] [--session-header FIELD]
    [--drain 30s] [--access-log FILE] [--egress JSON] [--wake-timeout 120s [--max-waiting 1000]]
    [--bans JSON] [--admin-password-file FILE]

Serves one proxy address in front of the pool's verified Proxies: each request and CONNECT goes
through one of them, with its credential, and the answer names it in X-Proxy-Op-Upstream. The
list is followed while the gateway runs. Clients authenticate with the users of --password-file
(htpasswd lines, SHA-512 crypt). GET /metrics answers per-upstream metrics to allowed sources.
With --wake-timeout, while the list is empty (a pool at zero) each request, tunnel and SOCKS5
connection waits up to that long for an upstream (at most --max-waiting at once), then gets 503.
--bans gives ban rules ({"rules": [{"hosts", "status", "header"?, "quarantineMs"}], "retries"});
--admin-password-file turns on the ban endpoint (POST /bans?upstream=&host=&for=, GET /bans).
`;

/** Runs `proxy-op gateway` until SIGTERM or SIGINT; resolves with the exit code. */
export async function gateway(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n', default: 'default' },
      standalone: { type: 'string' },
      state: { type: 'string' },
      upstreams: { type: 'string' },
      listen: { type: 'string' },
      'allowed-sources': { type: 'string' },
      'password-file': { type: 'string' },
      realm: { type: 'string' },
      session: { type: 'string', default: 'none' },
      'session-header': { type: 'string' },
      drain: { type: 'string', default: '30s' },
      egress: { type: 'string' },
      'access-log': { type: 'string' },
      'wake-timeout': { type: 'string' },
      bans: { type: 'string' },
      'admin-password-file': { type: 'string' },
      'max-waiting': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const file = upstreamsPath(values, positionals);
  const listen = /^(.+):(\d{1,5})$/.exec(values.listen ?? '');
  if (listen === null) throw new UsageError(`--listen needs ADDRESS:PORT\n\n${USAGE}`);
  const sources = (values['allowed-sources'] ?? '').split(',').filter((s) => s !== '');
  if (sources.length === 0) {
    throw new UsageError(`--allowed-sources needs the clients' CIDRs\n\n${USAGE}`);
  }
  const session = values.session as SessionPolicy;
  if (!['none', 'client', 'header'].includes(session)) {
    throw new UsageError(`--session is "${values.session}"; use none, client or header`);
  }
  const egress = egressOf(values.egress);
  const wake = wakeOf(values['wake-timeout'], values['max-waiting']);
  const bans = bansOf(values.bans);
  const name = positionals[0] === undefined ? 'gateway' : `gateway-${positionals[0]}`;
  const log = createLogger();
  const upstreams = firstList(file, log);
  const proxy = await startForwardProxy({
    name,
    address: (listen[1] as string).replace(/^\[|\]$/g, ''),
    port: Number(listen[2]),
    allowedSources: sources,
    ...(values['password-file'] === undefined
      ? {}
      : {
          auth: {
            realm: values.realm ?? name,
            passwordFile: values['password-file'],
          },
        }),
    accessLog: values['access-log'],
    ...(egress === undefined ? {} : { egress }),
    parents: {
      upstreams,
      session,
      sessionHeader: values['session-header'],
      drainMs: Math.max(1, parseDuration(values.drain)),
      ...(wake === undefined ? {} : { wake }),
      ...(bans === undefined ? {} : { bans }),
    },
    ...(values['admin-password-file'] === undefined
      ? {}
      : { admin: { realm: `${name} admin`, passwordFile: values['admin-password-file'] } }),
  });
  log.info({ ...proxy.address, upstreams: upstreams.length, file }, 'gateway listening');
  const stop = watchParentsFile(
    file,
    (list) => {
      try {
        proxy.setParents(list);
        log.info({ upstreams: list.length, file }, 'gateway upstreams changed');
      } catch (err) {
        log.warn(
          { err: (err as Error).message, file },
          'gateway upstreams refused; kept as they were',
        );
      }
    },
    (message) => log.warn({ err: message, file }, 'gateway upstreams unreadable'),
    upstreams,
  );
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'gateway shutting down');
  stop();
  await proxy.close();
  return 0;
}

/** `--egress JSON`: the pool's destination policy, checked; undefined: the defaults. */
function egressOf(text: string | undefined): EgressPolicy | undefined {
  if (text === undefined) return undefined;
  let policy: unknown;
  try {
    policy = JSON.parse(text);
  } catch {
    throw new UsageError(
      '--egress is not JSON: give the policy as {"allow": [...], "deny": [...]}',
    );
  }
  const problems = egressPolicyProblems(policy as EgressPolicy, '--egress');
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return policy as EgressPolicy;
}

/** The upstreams file the command line names. */
function upstreamsPath(
  values: { namespace: string; standalone?: string; state?: string; upstreams?: string },
  positionals: string[],
): string {
  if (values.upstreams !== undefined) {
    // A POOL given with --upstreams only names the gateway (its realm, its logs).
    if (positionals.length > 1 || values.standalone !== undefined) {
      throw new UsageError(`give --upstreams, or --standalone, not both\n\n${USAGE}`);
    }
    return values.upstreams;
  }
  const [pool, ...extra] = positionals;
  if (pool === undefined || extra.length > 0 || values.standalone === undefined) {
    throw new UsageError(
      `name one ProxyPool and --standalone DIR, or give --upstreams\n\n${USAGE}`,
    );
  }
  const where = targetOf(values);
  if (where.kind !== 'standalone') throw new UsageError(USAGE);
  return upstreamsFile(endpointsDir(where.stateFile), proxyKey(where.namespace, pool));
}

/** The list at start: none while the file is not there yet (the pool has no verified Proxy). */
function firstList(file: string, log: Logger): ParentProxy[] {
  if (!existsSync(file)) {
    log.warn({ file }, 'the upstreams file is not there yet; no upstream until it is');
    return [];
  }
  try {
    return readParentsFile(file);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `--wake-timeout` and `--max-waiting` as the parents' `wake`; a usage error names a bad one. */
function wakeOf(
  timeout: string | undefined,
  max: string | undefined,
): { timeoutMs: number; maxWaiting: number } | undefined {
  if (timeout === undefined) {
    if (max !== undefined) throw new UsageError(`--max-waiting needs --wake-timeout\n\n${USAGE}`);
    return undefined;
  }
  const timeoutMs = parseDuration(timeout);
  if (timeoutMs <= 0) throw new UsageError('--wake-timeout must be above 0 (120s)');
  const maxWaiting = max === undefined ? 1000 : Number(max);
  if (!Number.isInteger(maxWaiting) || maxWaiting < 1) {
    throw new UsageError(`--max-waiting is "${max}"; give a whole number, 1 or more`);
  }
  return { timeoutMs, maxWaiting };
}

/** `--bans` as the parents' ban options; a usage error for what is not JSON or not rules. */
function bansOf(text: string | undefined): BanOptions | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new UsageError('--bans is not JSON: give {"rules": [...], "retries": 2}');
  }
  const o = v as BanOptions;
  try {
    checkBanRules(o.rules ?? []);
  } catch (err) {
    throw new UsageError(`--bans: ${(err as Error).message}`);
  }
  return o;
}
