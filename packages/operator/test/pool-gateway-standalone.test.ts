// Peers: `proxy-op run --standalone` as a user runs it, supervising a ProxyPool's gateway (a real
// `proxy-op gateway` process) in front of the local provider's real forward-proxy processes on
// 127.0.85.0/24; a real HTTP origin on loopback; clients with the credential the operator issued.
// The pool is the README's spec.gateway example, on this test's address and port.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  type JsonLinesProcess,
  requestThroughProxy,
  runProcess,
  startHttpEchoOrigin,
} from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { requestViaGateway, runCli, spawnStandalone } from './cli-support.js';
import { basicOf, poolState, until } from './pool-support.js';
import { proxyPids } from './probe-support.js';

const ADDRESS = '127.0.85.250';
let root = '';
let dir = '';
let stateDir = '';
let providers = '';
let port = 0;
let op: JsonLinesProcess | undefined;
let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>>;

interface GatewayStatus {
  url: string;
  ready: boolean;
  secretName?: string;
  message?: string;
}
interface PoolState {
  status: { gateway?: GatewayStatus; endpoints?: Array<{ name: string }> };
}

const README = fileURLToPath(new URL('../README.md', import.meta.url));
let readmePool = '';

/** The README's spec.gateway example, on this test's address and port, 2 Proxies, rotating. */
const manifest = (enabled: boolean, maxAge = '1h') => {
  const doc = parseDocument(readmePool);
  doc.setIn(['spec', 'replicas'], 2);
  doc.setIn(['spec', 'rotation'], { maxAge, jitter: '0%', drainSeconds: 2, budget: 1 });
  doc.setIn(['spec', 'gateway', 'enabled'], enabled);
  doc.setIn(['spec', 'gateway', 'address'], ADDRESS);
  doc.setIn(['spec', 'gateway', 'port'], port);
  // The origin is on loopback, which the pool's proxies and its gateway refuse unless allowed.
  doc.setIn(['spec', 'template', 'spec', 'egress'], { allow: [`127.0.0.1:${echo.port}`] });
  return doc.toString();
};

const pool = () => poolState<PoolState>(root, 'default/front');

const ready = () =>
  until(
    async () => {
      const p = await pool();
      return p?.status.gateway?.ready === true && (p.status.endpoints ?? []).length === 2
        ? p.status
        : undefined;
    },
    60_000,
    'the gateway ready in front of 2 endpoints',
  );

/** `GET /metrics` of the gateway, with `authorization` as its Proxy-Authorization. */
function metricsOf(authorization?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: ADDRESS,
        port,
        path: '/metrics',
        headers: authorization === undefined ? {} : { 'proxy-authorization': authorization },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The client URL the operator keeps for the gateway. */
async function clientUrl(file: string): Promise<URL> {
  const kept = JSON.parse(await readFile(file, 'utf8')) as { url: string };
  return new URL(kept.url);
}

const gatewayPid = async () => Number((await readFile(pidFile(), 'utf8')).trim());
const pidFile = () => join(root, 'proxies.state.credentials.d', 'default.front.gateway.pid');
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const refused = () =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, ADDRESS);
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });

const start = (): JsonLinesProcess => spawnStandalone(dir, providers);

async function stop(): Promise<void> {
  op?.kill('SIGTERM');
  await op?.exit;
  op = undefined;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'proxy-op-pool-gateway-'));
  dir = join(root, 'proxies');
  stateDir = join(root, 'local');
  providers = join(root, 'providers.yaml');
  await writeFile(
    providers,
    `installation: pool-gateway\nproviders:\n  - name: local\n    type: local\n    local: { stateDir: ${stateDir}, addressRange: 127.0.85.0/24 }\n`,
  );
  await mkdir(dir);
  port = await freePort(ADDRESS);
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('#### The operator runs it: `spec.gateway`'));
  readmePool = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  expect(readmePool, 'the README has the spec.gateway example').toContain('gateway:');
  echo = await startHttpEchoOrigin();
});

afterAll(async () => {
  const pid = await gatewayPid().catch(() => 0);
  await stop();
  if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
  for (const p of proxyPids(stateDir)) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  echo?.server.close();
  await rm(root, { recursive: true, force: true });
});

describe('spec.gateway in standalone mode: the operator runs the pool’s gateway', () => {
  let url: URL;
  let secretName = '';

  it('starts it with a credential of its own, and clients get through it to a pool Proxy', async () => {
    await writeFile(join(dir, 'pool.yaml'), manifest(true));
    op = start();
    const status = await ready();
    expect(status.gateway?.url).toBe(`http://${ADDRESS}:${port}`);
    secretName = status.gateway?.secretName ?? '';
    expect(secretName).toBe(
      join(root, 'proxies.state.credentials.d', 'default.front.gateway.json'),
    );
    expect((await stat(secretName)).mode & 0o777).toBe(0o600);
    url = await clientUrl(secretName);
    expect(url.host).toBe(`${ADDRESS}:${port}`);
    const names = (status.endpoints ?? []).map((e) => e.name).sort();
    // Requests spread over both Proxies (the one with the fewest in flight, ties in turn).
    const seen = new Set<string>();
    const end = Date.now() + 10_000;
    while (seen.size < names.length && Date.now() < end) {
      const via = await requestViaGateway(
        { address: ADDRESS, port },
        `http://127.0.0.1:${echo.port}/via`,
        basicOf(url),
      );
      expect(via.status).toBe(200);
      seen.add(via.upstream ?? '');
    }
    // The gateway's metrics need its credential (407 without it).
    expect((await metricsOf()).status).toBe(407);
    const metrics = await metricsOf(basicOf(url));
    expect(metrics.status).toBe(200);
    expect([...seen].sort(), metrics.body).toEqual(names);
    const without = await requestViaGateway(
      { address: ADDRESS, port },
      `http://127.0.0.1:${echo.port}/`,
    );
    expect(without.status).toBe(407);
    const wrong = new URL(url);
    wrong.password = 'not-it';
    const r = await requestViaGateway(
      { address: ADDRESS, port },
      `http://127.0.0.1:${echo.port}/`,
      basicOf(wrong),
    );
    expect(r.status).toBe(407);
    // The credential is in the file only: not in the status, not on the operator's output.
    expect(JSON.stringify(await pool())).not.toContain(decodeURIComponent(url.password));
    expect(JSON.stringify(op?.logs)).not.toContain(decodeURIComponent(url.password));
  }, 90_000);

  it('proxy-op url --pool puts the session and filters in the user name; curl keeps the session on one Proxy, over HTTP and SOCKS5', async () => {
    expect(url, 'the gateway of the first test').toBeDefined();
    const cli = (...flags: string[]) =>
      runCli(['url', 'front', '--pool', '--standalone', dir, ...flags]);
    const plain = await cli();
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe(url.href.replace(/\/$/, ''));
    const session = await cli('--session', 'cart42', '--ttl', '30m', '--provider', 'local');
    expect(session.code, session.stderr).toBe(0);
    const sessionUrl = new URL(session.stdout.trim());
    expect(decodeURIComponent(sessionUrl.username)).toBe(
      `${decodeURIComponent(url.username)}-session-cart42-ttl-30m-provider-local`,
    );
    const socks = await cli(
      '--session',
      'cart42',
      '--ttl',
      '30m',
      '--provider',
      'local',
      '--socks',
    );
    expect(socks.stdout.trim()).toBe(session.stdout.trim().replace(/^http:/, 'socks5h:'));
    // The user name is the gateway's to read: every request of the session goes through one Proxy.
    const target = `http://127.0.0.1:${echo.port}/session`;
    const through = async (proxy: string) => {
      const r = await runProcess('curl', [
        '-sS',
        '-D',
        '-',
        '-o',
        '/dev/null',
        '-x',
        proxy,
        target,
      ]);
      expect(r.code, r.stderr).toBe(0);
      return /x-proxy-op-upstream: (\S+)/i.exec(r.stdout)?.[1] ?? 'tunnel';
    };
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add(await through(session.stdout.trim()));
    expect(seen.size).toBe(1);
    const viaSocks = await runProcess('curl', ['-sS', '-x', socks.stdout.trim(), target]);
    expect(viaSocks.code, viaSocks.stderr).toBe(0);
    // A filter nothing matches: 502 naming it.
    const none = await cli('--provider', 'gcp');
    const missing = await runProcess('curl', ['-sS', '-x', none.stdout.trim(), target]);
    expect(missing.stdout).toBe('no upstream matches provider=gcp\n');
    // A bad flag is refused before anything is printed, naming the flag.
    const bad = await cli('--country', 'germany');
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('"--country-germany" is not valid');
    const alone = await runCli(['url', 'front', '--standalone', dir, '--session', 'x']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--session applies to a pool');
  }, 60_000);

  it('rotation of the pool under load through the gateway fails no request', async () => {
    expect(url, 'the gateway of the first test').toBeDefined();
    const first = new Set(((await pool())?.status.endpoints ?? []).map((e) => e.name));
    // A short maxAge: both Proxies are past it, and rotate one at a time (the gateway's plan
    // is the same, so it is not restarted).
    await writeFile(join(dir, 'pool.yaml'), manifest(true, '5s'));
    let failures = 0;
    let requests = 0;
    const carried = new Set<string>();
    const failed: string[] = [];
    let done = false;
    const worker = async () => {
      while (!done) {
        try {
          const r = await requestViaGateway(
            { address: ADDRESS, port },
            `http://127.0.0.1:${echo.port}/load`,
            basicOf(url),
          );
          requests += 1;
          if (r.status === 200) carried.add(r.upstream ?? '');
          else {
            failures += 1;
            failed.push(`${r.status} via ${r.upstream}`);
          }
        } catch (err) {
          failures += 1;
          failed.push((err as Error).message);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    try {
      await until(
        async () => {
          const now = ((await pool())?.status.endpoints ?? []).map((e) => e.name);
          return now.length === 2 && now.every((n) => !first.has(n)) ? true : undefined;
        },
        90_000,
        'both Proxies replaced by rotation',
      );
      // A moment on the new Proxies alone.
      await new Promise((r) => setTimeout(r, 1_500));
    } finally {
      done = true;
      await Promise.all(workers);
      await writeFile(join(dir, 'pool.yaml'), manifest(true));
    }
    console.log(`rotation through the gateway: ${requests} requests, ${failures} failed`);
    expect(failures, failed.slice(0, 5).join('; ')).toBe(0);
    expect(requests).toBeGreaterThan(100);
    expect([...carried].filter((n) => first.has(n)).length, 'the old Proxies carried').toBe(2);
    expect([...carried].filter((n) => !first.has(n)).length, 'the new ones too').toBeGreaterThan(0);
  }, 120_000);

  it('a gateway that dies is started again; it stops with the operator and comes back with the same credential', async () => {
    const before = await gatewayPid();
    process.kill(before, 'SIGKILL');
    // The state file may still say ready from before: a client getting through is the test.
    const through = async (path: string) =>
      requestThroughProxy({ address: ADDRESS, port }, `http://127.0.0.1:${echo.port}${path}`, {
        proxyAuthorization: basicOf(url),
      }).catch(() => ({ status: 0, body: '' }));
    await until(
      async () => {
        const pid = await gatewayPid().catch(() => before);
        return pid !== before && (await through('/again')).status === 200 ? pid : undefined;
      },
      30_000,
      'a new gateway process serving',
    );
    expect(alive(before)).toBe(false);

    const running = await gatewayPid();
    await stop();
    expect(alive(running), 'the gateway stops with the operator').toBe(false);
    expect(await refused()).toBe(true);
    op = start();
    await until(
      async () => ((await through('/back')).status === 200 ? true : undefined),
      30_000,
      'the gateway serving after the restart',
    );
    expect((await clientUrl(secretName)).href, 'the same credential').toBe(url.href);
  }, 90_000);

  it('disabling it stops the process and removes its credential', async () => {
    const pid = await gatewayPid();
    await writeFile(join(dir, 'pool.yaml'), manifest(false));
    await until(
      async () => ((await pool())?.status.gateway === undefined && !alive(pid) ? true : undefined),
      30_000,
      'the gateway gone',
    );
    expect(await refused()).toBe(true);
    expect(existsSync(secretName)).toBe(false);
    expect(existsSync(pidFile())).toBe(false);
    await rm(join(dir, 'pool.yaml'));
    await until(
      async () => ((await pool()) === undefined ? true : undefined),
      60_000,
      'the pool gone',
    );
  }, 90_000);
});
