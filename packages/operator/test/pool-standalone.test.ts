// Peers: the CLI (`proxy-op run --standalone`, `proxy-op endpoints`) as a user runs it, over the
// local provider's real forward-proxy processes on 127.0.73.0/24; a real HTTP origin on loopback
// reached through the published endpoints. The manifest is the README's ProxyPool example.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashPassword } from '@proxy-op/forward-proxy';
import {
  freePort,
  type JsonLinesProcess,
  requestThroughProxy,
  spawnJsonLines,
  startHttpEchoOrigin,
} from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { CLI, requestViaGateway, runCli, spawnStandalone } from './cli-support.js';
import { proxyPids } from './probe-support.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));

let root = '';
let dir = '';
let providers = '';
let stateDir = '';
let op: JsonLinesProcess | undefined;
let gw: JsonLinesProcess | undefined;
let gatewayAt = { address: '', port: 0 };
const GATEWAY_AUTH = `Basic ${Buffer.from('client:SENTINEL-gateway-client-5d2').toString('base64')}`;
let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>>;

/**
 * The YAML block under the README's "### ProxyPool" heading, its Proxies allowed to reach this
 * test's origin (on loopback, which they refuse unless allowed).
 */
async function readmePool(): Promise<string> {
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('### ProxyPool'));
  const m = /```yaml\n([\s\S]*?)```/.exec(section);
  if (m === null) throw new Error("no YAML block in the README's ProxyPool section");
  const doc = parseDocument(m[1] as string);
  doc.setIn(['spec', 'template', 'spec', 'egress'], { allow: [`127.0.0.1:${echo.port}`] });
  return doc.toString();
}

const endpointsPath = () => join(root, 'proxies.state.endpoints.d', 'default.egress');
const lines = async () =>
  (await readFile(endpointsPath(), 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
const state = async () =>
  JSON.parse(await readFile(join(root, 'proxies.state.json'), 'utf8')) as {
    proxies: Record<
      string,
      { ownerReferences?: Array<{ name: string }>; deletionTimestamp?: string }
    >;
    pools: Record<string, { uid: string }>;
  };
const owned = async () =>
  Object.entries((await state()).proxies)
    .filter(
      ([, e]) => e.ownerReferences?.[0]?.name === 'egress' && e.deletionTimestamp === undefined,
    )
    .map(([k]) => k)
    .sort();

async function until(fn: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const start = (): JsonLinesProcess => spawnStandalone(dir, providers);

async function stop(p: JsonLinesProcess | undefined): Promise<void> {
  if (p === undefined) return;
  p.kill('SIGTERM');
  await p.exit;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'proxy-op-pool-standalone-'));
  dir = join(root, 'proxies');
  stateDir = join(root, 'local');
  providers = join(root, 'providers.yaml');
  await writeFile(
    providers,
    `installation: pool-standalone\nproviders:\n  - name: local\n    type: local\n    local: { stateDir: ${stateDir}, addressRange: 127.0.73.0/24 }\n`,
  );
  await (await import('node:fs/promises')).mkdir(dir);
  echo = await startHttpEchoOrigin();
});

afterAll(async () => {
  gw?.kill('SIGKILL');
  await stop(op);
  for (const pid of proxyPids(stateDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  echo?.server.close();
  await rm(root, { recursive: true, force: true });
});

describe('ProxyPool in standalone mode, from the README', () => {
  it('makes the pool, publishes an endpoint file with credentials that clients get through', async () => {
    await writeFile(join(dir, 'pool.yaml'), await readmePool());
    op = start();
    await until(async () => (await lines()).length === 3, 60_000, '3 endpoints');
    expect((await stat(endpointsPath())).mode & 0o777).toBe(0o600);
    const printed = await runCli(['endpoints', 'egress', '--standalone', dir]);
    expect(printed.code).toBe(0);
    const urls = printed.stdout.trim().split('\n');
    expect(urls.sort()).toEqual((await lines()).sort());
    for (const u of urls) {
      const url = new URL(u);
      expect(url.username).not.toBe('');
      const basic = Buffer.from(
        `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`,
      );
      const r = await requestThroughProxy(
        { address: url.hostname, port: Number(url.port) },
        `http://127.0.0.1:${echo.port}/through`,
        { proxyAuthorization: `Basic ${basic.toString('base64')}` },
      );
      expect(r.status).toBe(200);
    }
    const plain = await runCli(['endpoints', 'egress', '--standalone', dir, '--plain']);
    expect(plain.stdout).not.toContain('@');
    expect(plain.stdout.trim().split('\n')).toHaveLength(3);
    expect(await owned()).toHaveLength(3);
    expect(Object.keys((await state()).pools)).toEqual(['default/egress']);
  }, 90_000);

  it('proxy-op gateway: one address in front of the pool, following its named upstreams', async () => {
    const upstreamsPath = `${endpointsPath()}.upstreams.json`;
    expect((await stat(upstreamsPath)).mode & 0o777).toBe(0o600);
    const named = JSON.parse(await readFile(upstreamsPath, 'utf8')) as {
      upstreams: Array<{ name: string; url: string; verified?: string }>;
    };
    expect(named.upstreams.map((u) => u.url).sort()).toEqual((await lines()).sort());
    const names = named.upstreams.map((u) => u.name).sort();
    expect(names).toEqual((await owned()).map((k) => k.replace('default/', '')));
    for (const u of named.upstreams) expect(u.verified).toMatch(/^\d{4}-\d\d-\d\dT/);
    const passwd = join(root, 'gateway.passwd');
    await writeFile(passwd, `client:${hashPassword('SENTINEL-gateway-client-5d2')}\n`);
    const port = await freePort('127.0.73.250');
    gatewayAt = { address: '127.0.73.250', port };
    gw = spawnJsonLines(process.execPath, [
      CLI,
      'gateway',
      'egress',
      '--standalone',
      dir,
      '--listen',
      `127.0.73.250:${port}`,
      '--allowed-sources',
      '127.0.0.1/32',
      '--password-file',
      passwd,
      '--egress',
      JSON.stringify({ allow: [`127.0.0.1:${echo.port}`] }),
    ]);
    {
      const listening = await gw.waitForLog((l) => (l.msg === 'gateway listening' ? l : undefined));
      expect(listening.upstreams).toBe(3);
      const seen = new Set<string>();
      for (let i = 0; i < 12; i++) {
        const r = await requestViaGateway(
          { address: '127.0.73.250', port },
          `http://127.0.0.1:${echo.port}/via-gateway`,
          GATEWAY_AUTH,
        );
        expect(r.status).toBe(200);
        seen.add(r.upstream ?? '');
      }
      expect([...seen].sort(), 'each request names the Proxy that carried it').toEqual(names);
      const refused = await requestViaGateway(
        { address: '127.0.73.250', port },
        `http://127.0.0.1:${echo.port}/via-gateway`,
        undefined,
      );
      expect(refused.status).toBe(407);
      // Nothing of any Proxy's credential on the gateway's output.
      for (const u of named.upstreams) {
        expect(JSON.stringify(gw.logs)).not.toContain(decodeURIComponent(new URL(u.url).password));
      }
    }
  });

  it('scales down on a manifest edit, and a restart makes no duplicate', async () => {
    const doc = parseDocument(await readmePool());
    doc.setIn(['spec', 'replicas'], 1);
    // The README's 30 s drain applies to a scale-down too; a test has no clients to wait for.
    doc.setIn(['spec', 'rotation', 'drainSeconds'], 1);
    await writeFile(join(dir, 'pool.yaml'), doc.toString());
    await until(
      async () => (await owned()).length === 1 && (await lines()).length === 1,
      60_000,
      'one Proxy',
    );
    const kept = await owned();
    // The gateway follows: every request goes to the one Proxy left.
    const through = async () =>
      (await requestViaGateway(gatewayAt, `http://127.0.0.1:${echo.port}/after`, GATEWAY_AUTH))
        .upstream;
    const left = kept[0]?.replace('default/', '');
    await until(async () => (await through()) === left, 10_000, 'the gateway follows the pool');
    for (let i = 0; i < 6; i++) expect(await through()).toBe(left);
    gw?.kill('SIGTERM');
    expect((await gw?.exit)?.code, 'the gateway exits 0 on SIGTERM').toBe(0);
    gw = undefined;
    await stop(op);
    op = start();
    await op.waitForLog(
      (l) => (l.msg === 'proxy-op running in standalone mode' ? l : undefined),
      30_000,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await owned()).toEqual(kept);
    expect(proxyPids(stateDir)).toHaveLength(1);
  }, 90_000);

  it('removing the manifest deletes the pool, its Proxies and their processes', async () => {
    await rm(join(dir, 'pool.yaml'));
    await until(
      async () => Object.keys((await state()).proxies).length === 0,
      60_000,
      'Proxies gone',
    );
    expect((await state()).pools).toEqual({});
    expect((await readdir(stateDir)).filter((f) => f.endsWith('.json'))).toEqual([]);
  }, 90_000);
});
