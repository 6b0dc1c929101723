// Peers: `proxy-op run --standalone` supervising a ProxyPool's gateway (a real `proxy-op gateway`
// process) in front of the local provider's real forward-proxy processes on 127.0.87.0/24, with
// spec.bans; two real origins on loopback, the first answering 403 to one Proxy's address (a
// target that banned it); `proxy-op ban` as a user runs it.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type JsonLinesProcess } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestViaGateway, runCli, spawnStandalone } from './cli-support.js';
import { basicOf, poolState, until } from './pool-support.js';
import { proxyPids } from './probe-support.js';

const ADDRESS = '127.0.0.1';
let root = '';
let dir = '';
let stateDir = '';
let port = 0;
let op: JsonLinesProcess | undefined;
let authorization = '';
/** The address the first origin refuses with 403. */
let banned = '';
const origins: ReturnType<typeof createServer>[] = [];
const ports = new Map<string, number>();
const seen = new Map<string, string[]>();

interface PoolState {
  status: {
    endpoints?: Array<{ name: string; egressIP?: string }>;
    gateway?: { ready: boolean; secretName?: string };
  };
}

const pool = () => poolState<PoolState>(root, 'default/guarded');

async function origin(host: string): Promise<void> {
  const s = createServer((req, res) => {
    const from = req.socket.remoteAddress ?? '';
    seen.get(host)?.push(from);
    if (host === '127.0.0.1' && from === banned) {
      res.writeHead(403).end('denied');
      return;
    }
    res.end(from);
  });
  await new Promise<void>((r) => s.listen(0, host, r));
  origins.push(s);
  seen.set(host, []);
  ports.set(host, (s.address() as AddressInfo).port);
}

/** The gateway's metrics, with its credential. */
function metrics(): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: ADDRESS,
        port,
        path: '/metrics',
        agent: false,
        headers: { 'proxy-authorization': authorization },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', () => resolve(''));
    req.end();
  });
}

function viaGateway(host: string) {
  return requestViaGateway(
    { address: ADDRESS, port },
    `http://${host}:${ports.get(host)}/`,
    authorization,
  );
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'proxy-op-pool-bans-'));
  dir = join(root, 'proxies');
  stateDir = join(root, 'local');
  const providers = join(root, 'providers.yaml');
  await writeFile(
    providers,
    `installation: pool-bans\nproviders:\n  - name: local\n    type: local\n    local: { stateDir: ${stateDir}, addressRange: 127.0.87.0/24 }\n`,
  );
  await mkdir(dir);
  port = await freePort(ADDRESS);
  await origin('127.0.0.1');
  await origin('127.0.0.2');
  const allow = [...ports].map(([h, p]) => `"${h}:${p}"`).join(', ');
  await writeFile(
    join(dir, 'guarded.yaml'),
    [
      'apiVersion: proxy-op.io/v1alpha1',
      'kind: ProxyPool',
      'metadata: { name: guarded }',
      'spec:',
      '  replicas: 2',
      '  template:',
      '    spec:',
      '      provider: local',
      '      allowedSources: [127.0.0.0/8]',
      `      egress: { allow: [${allow}] }`,
      `  gateway: { enabled: true, address: ${ADDRESS}, port: ${port} }`,
      '  bans:',
      '    rules:',
      '      - { name: denied, hosts: ["127.0.0.1"], status: [403], quarantine: 30m }',
      '',
    ].join('\n'),
  );
  op = spawnStandalone(dir, providers);
  const st = await until(
    async () => {
      const s = (await pool())?.status;
      return s?.gateway?.ready === true && (s.endpoints ?? []).length === 2 ? s : undefined;
    },
    60_000,
    'the gateway ready in front of 2 endpoints',
  );
  banned = st.endpoints?.[0]?.egressIP ?? '';
  const kept = JSON.parse(await readFile(st.gateway?.secretName ?? '', 'utf8')) as { url: string };
  const u = new URL(kept.url);
  authorization = basicOf(u);
  // The gateway follows the upstreams file within a second: wait until it has both Proxies.
  await until(
    async () => ((await metrics()).match(/_upstream_available\{[^}]*\} 1/g) ?? []).length === 2,
    30_000,
    'the gateway with 2 upstreams',
  );
  expect(banned).toMatch(/^127\.0\.87\.\d+$/);
}, 90_000);

afterAll(async () => {
  op?.kill('SIGTERM');
  await op?.exit;
  for (const p of proxyPids(stateDir)) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  for (const o of origins) o.close();
  await rm(root, { recursive: true, force: true });
});

describe('spec.bans in standalone mode', () => {
  it('no ban reaches a client: the banned Proxy is retried around, then kept from the host', async () => {
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await viaGateway('127.0.0.1'));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.map((a) => a.body)).not.toContain(banned);
    expect(seen.get('127.0.0.1')?.filter((f) => f === banned)).toHaveLength(1);
    // It still serves the other host.
    const other = new Set<string>();
    for (let i = 0; i < 8; i++) other.add((await viaGateway('127.0.0.2')).body);
    expect(other).toContain(banned);
  }, 60_000);

  it('proxy-op ban keeps a Proxy from a host, with the gateway’s admin credential', async () => {
    const member = (await pool())?.status.endpoints?.find((e) => e.egressIP !== banned);
    expect(member).toBeDefined();
    const r = await runCli([
      'ban',
      'guarded',
      member?.name ?? '',
      '--host',
      '127.0.0.2',
      '--for',
      '10m',
      '--standalone',
      dir,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      `gateway of default/guarded: ${member?.name} kept from 127.0.0.2 for 10m\n`,
    );
    const from = new Set<string>();
    for (let i = 0; i < 8; i++) from.add((await viaGateway('127.0.0.2')).body);
    expect(from).toEqual(new Set([banned]));
    const bad = await runCli([
      'ban',
      'guarded',
      member?.name ?? '',
      '--host',
      '127.0.0.2',
      '--for',
      'forever',
      '--standalone',
      dir,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('for: give a duration from 1s to 24h');
    const admin = await readFile(
      join(root, 'proxies.state.credentials.d', 'default.guarded.gateway-admin.json'),
      'utf8',
    );
    const password = (JSON.parse(admin) as { record: { current: { password: string } } }).record
      .current.password;
    expect(r.stdout + r.stderr + bad.stdout + bad.stderr).not.toContain(password);
  }, 60_000);
});
