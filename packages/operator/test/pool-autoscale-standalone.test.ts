// Peers: `proxy-op run --standalone` as a user runs it, supervising an autoscaled ProxyPool's
// gateway (a real `proxy-op gateway` process) in front of the local provider's real
// forward-proxy processes on 127.0.86.0/24; a real HTTP origin on loopback. The pool is the
// README's spec.autoscale example, on this test's port, with short waits.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type JsonLinesProcess, startHttpEchoOrigin } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { requestViaGateway, spawnStandalone } from './cli-support.js';
import { basicOf, poolState, until } from './pool-support.js';
import { proxyPids } from './probe-support.js';

const ADDRESS = '127.0.0.1';
let root = '';
let dir = '';
let stateDir = '';
let port = 0;
let op: JsonLinesProcess | undefined;
let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>>;
let authorization = '';

interface PoolState {
  status: {
    replicas?: number;
    autoscale?: { replicas: number; desiredReplicas: number };
    gateway?: { ready: boolean; secretName?: string; message?: string };
  };
}

const pool = () => poolState<PoolState>(root, 'default/lazy');

const README = fileURLToPath(new URL('../README.md', import.meta.url));

/** A GET through the gateway: its status, its body and how long it took. */
async function viaGateway(path: string): Promise<{ status: number; ms: number; body: string }> {
  const t0 = Date.now();
  const r = await requestViaGateway(
    { address: ADDRESS, port },
    `http://127.0.0.1:${echo.port}${path}`,
    authorization,
  );
  return { status: r.status, body: r.body, ms: Date.now() - t0 };
}

const events = (reason: string) =>
  (op?.logs ?? []).filter(
    (l) => typeof l.msg === 'string' && l.msg.includes('→') && l.msg.includes(reason),
  );

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'proxy-op-pool-autoscale-'));
  dir = join(root, 'proxies');
  stateDir = join(root, 'local');
  const providers = join(root, 'providers.yaml');
  await writeFile(
    providers,
    `installation: pool-autoscale\nproviders:\n  - name: local\n    type: local\n    local: { stateDir: ${stateDir}, addressRange: 127.0.86.0/24 }\n`,
  );
  await mkdir(dir);
  port = await freePort(ADDRESS);
  echo = await startHttpEchoOrigin();
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('#### Autoscaling: `spec.autoscale`'));
  const example = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  expect(example, 'the README has the spec.autoscale example').toContain('autoscale:');
  const doc = parseDocument(example);
  doc.setIn(['spec', 'gateway', 'port'], port);
  doc.setIn(['spec', 'autoscale', 'maxReplicas'], 2);
  doc.setIn(['spec', 'autoscale', 'targetInFlight'], 2);
  doc.setIn(['spec', 'autoscale', 'scaleDownAfter'], '2s');
  doc.setIn(['spec', 'autoscale', 'wakeTimeout'], '60s');
  doc.setIn(['spec', 'template', 'spec', 'egress'], { allow: [`127.0.0.1:${echo.port}`] });
  await writeFile(join(dir, 'lazy.yaml'), doc.toString());
  op = spawnStandalone(dir, providers);
  const secret = await until(
    async () => (await pool())?.status.gateway?.secretName,
    30_000,
    'the gateway credential',
  );
  const kept = JSON.parse(await readFile(secret, 'utf8')) as { url: string };
  const u = new URL(kept.url);
  authorization = basicOf(u);
}, 60_000);

afterAll(async () => {
  op?.kill('SIGTERM');
  await op?.exit;
  for (const p of proxyPids(stateDir)) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  echo?.server.close();
  await rm(root, { recursive: true, force: true });
});

describe('spec.autoscale in standalone mode: a pool that scales to zero and wakes on demand', () => {
  it('starts at zero Proxies; the first request wakes one and is answered, with no client error', async () => {
    await until(
      async () => {
        const st = (await pool())?.status;
        // Listening, with nothing to send clients to.
        return (
          st?.autoscale?.replicas === 0 && st.gateway?.message?.startsWith('no verified Proxy')
        );
      },
      30_000,
      `the pool at zero, its gateway listening (${JSON.stringify(op?.logs.slice(-5))})`,
    );
    expect(proxyPids(stateDir)).toEqual([]);
    const first = await viaGateway('/first');
    expect(first.status, first.body).toBe(200);
    expect(JSON.parse(first.body)).toMatchObject({ path: '/first' });
    expect(proxyPids(stateDir)).toHaveLength(1);
    expect(events('ScaledUp').length).toBeGreaterThan(0);
    // The time from zero to the first byte, for the closing figures (not judged here).
    console.log(`autoscale: zero to first byte ${first.ms} ms`);
  }, 60_000);

  it('a load step scales to maxReplicas, and idle brings the pool back to zero processes', async () => {
    // Four slow requests at once: 4 in flight at 2 per Proxy wants 2 Proxies.
    const slow = Array.from({ length: 4 }, (_, i) => viaGateway(`/slow${i}?delay=8000`));
    await until(
      async () => (await pool())?.status.autoscale?.replicas === 2,
      30_000,
      'the pool at 2',
    );
    for (const r of await Promise.all(slow)) expect(r.status).toBe(200);
    await until(async () => proxyPids(stateDir).length === 2, 30_000, '2 proxy processes');
    await until(
      async () =>
        (await pool())?.status.autoscale?.replicas === 0 && proxyPids(stateDir).length === 0,
      60_000,
      'back to zero processes',
    );
    expect(events('ScaledDown').length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
