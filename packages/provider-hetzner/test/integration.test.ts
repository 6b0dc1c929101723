// Peer: a real Hetzner Cloud project, only when HCLOUD_TOKEN is set (README, Testing). It creates
// one server with its firewall, runs it for a few minutes (one billed hour) and deletes both.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider, errorClassOf, isNotFound, type Provider } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { consoleLogger, durationFromEnv, teeLogger } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firewallName } from '../src/firewall.js';
import { providerModule } from '../src/index.js';

const env = process.env;
const token = env.HCLOUD_TOKEN ?? '';
if (token === '') {
  console.warn(
    'skipping the real-project Hetzner Cloud tests: set HCLOUD_TOKEN (a Read & Write token; see README, Testing)',
  );
}

/** HCLOUD_TEST_TIMEOUT: `15m`, `90s` or plain seconds. */
const timeoutMs = durationFromEnv(env.HCLOUD_TEST_TIMEOUT, 10 * 60_000);
const location = env.HCLOUD_TEST_LOCATION ?? 'fsn1';
const serverType = env.HCLOUD_TEST_SERVER_TYPE ?? 'cx23';
const image = env.HCLOUD_TEST_IMAGE ?? 'ubuntu-24.04';
const CLOUD_INIT_SECRET = 'CLOUDINIT-SENTINEL-real-project-8c41';

async function poll<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

/** One read of the real API with the token, for what the provider does not read (firewalls by name). */
async function api(path: string): Promise<Record<string, unknown>> {
  const endpoint = env.HCLOUD_ENDPOINT ?? 'https://api.hetzner.cloud/v1';
  const res = await fetch(`${endpoint}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()) as Record<string, unknown>;
}

describe.skipIf(token === '')('a real Hetzner Cloud project', () => {
  let dir: string;
  let config: Record<string, unknown>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hetzner-it-'));
    writeFileSync(join(dir, 'token'), token, { mode: 0o600 });
    config = {
      tokenFile: join(dir, 'token'),
      locations: [location],
      serverTypes: [serverType],
      images: { test: image },
      ...(env.HCLOUD_ENDPOINT ? { endpoint: env.HCLOUD_ENDPOINT } : {}),
    };
  });

  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('Hetzner: Check reports the project ready', async () => {
    const p = await createProvider(providerModule, 'hetzner-test', config, {});
    try {
      const [r] = await p.check!();
      expect(r?.reason, r?.message).toBe('Reachable');
    } finally {
      await p.close?.();
    }
  });

  it(
    'Hetzner: lifecycle: create, repeat, Running, listed, delete, gone, nothing left',
    async () => {
      const logs = createLogSink();
      const spans = createSpanRecorder();
      // HCLOUD_TEST_LOG_LEVEL (`debug`, `trace`) prints the provider's lines at that level and above.
      const logger = teeLogger(logs.logger, consoleLogger(env.HCLOUD_TEST_LOG_LEVEL));
      const provider: Provider = await createProvider(providerModule, 'hetzner-test', config, {
        logger,
        tracer: spans.tracer,
      });
      const name = `proxy-op-it-${Date.now().toString(36)}`;
      const uid = `00000000-0000-4000-8000-${Date.now().toString().padStart(12, '0').slice(-12)}`;
      const req = {
        name,
        namespace: 'default',
        uid,
        port: 3128,
        cloudInit: new TextEncoder().encode(`#cloud-config\n# ${CLOUD_INIT_SECRET}\n`),
        allowedSources: [env.HCLOUD_TEST_SOURCE ?? '192.0.2.0/24'],
        placement: { region: location, machineType: serverType, image: 'test' },
      };
      let id: string | undefined;
      try {
        id = await provider.create(req);
        expect(id).toBe(`servers/${name}`);
        expect(await provider.create(req)).toBe(id);
        const running = await poll('Running', async () => {
          const inst = await provider.get(id as string);
          return inst.state === 'Running' ? inst : undefined;
        });
        expect(running.uid).toBe(uid);
        expect(running.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect(running.ipv6Range).toMatch(/^[0-9a-f:]+::\/64$/);
        expect(running.location?.region).toBe(location);
        expect(running.location?.country).toMatch(/^[A-Z]{2}$/);
        expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
        if (env.HCLOUD_TEST_KEEP === '1') return;
        await provider.delete(id, { uid });
        const err = await provider.get(id).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (!isNotFound(err)) throw new Error(`Get after Delete: ${errorClassOf(err)}`);
        await provider.delete(id);
        expect((await provider.listByTag()).map((i) => i.id)).not.toContain(id);
        const firewalls = await api(`/firewalls?name=${encodeURIComponent(firewallName(name))}`);
        expect(firewalls.firewalls, 'the firewall left behind').toEqual([]);
        const create = spans.spans().find((s) => s.name === 'provider.create');
        const children = spans
          .spans()
          .filter((s) => s.parentSpanContext?.spanId === create?.spanContext().spanId);
        expect(children.map((s) => s.name)).toContain('hetzner.createServer');
        expect(leakedIn(logs.text(), CLOUD_INIT_SECRET)).toBeUndefined();
        expect(leakedIn(spans.text(), CLOUD_INIT_SECRET)).toBeUndefined();
        expect(leakedIn(logs.text(), token)).toBeUndefined();
      } finally {
        if (id !== undefined && env.HCLOUD_TEST_KEEP !== '1') {
          await provider.delete(id).catch(() => {});
        }
        await provider.close?.();
      }
    },
    timeoutMs * 2 + 60_000,
  );
});
