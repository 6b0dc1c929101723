// Peer: a real Google Cloud project, only when the GCP_TEST_* variables are set (README,
// Testing). It creates one e2-micro instance (and, with GCP_TEST_FIREWALL_SOURCE, one firewall
// rule) and deletes them again.
import { createProvider, errorClassOf, isNotFound, type Provider } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { consoleLogger, durationFromEnv, teeLogger } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { firewallName } from '../src/build.js';
import { parseId, providerModule } from '../src/index.js';

const env = process.env;
const REQUIRED = ['GCP_TEST_PROJECT', 'GCP_TEST_ZONE'] as const;
const missing = REQUIRED.filter((k) => (env[k] ?? '') === '');
if (missing.length > 0) {
  console.warn(
    `skipping the real-project Compute Engine tests: set ${missing.join(', ')} (see README, Testing)`,
  );
}

/** GCP_TEST_TIMEOUT: `15m`, `90s` or plain seconds. */
const timeoutMs = durationFromEnv(env.GCP_TEST_TIMEOUT, 15 * 60_000);

function config(): Record<string, unknown> {
  const source = env.GCP_TEST_FIREWALL_SOURCE;
  return {
    project: env.GCP_TEST_PROJECT,
    zones: [env.GCP_TEST_ZONE],
    machineTypes: [env.GCP_TEST_MACHINE_TYPE ?? 'e2-micro'],
    ...(env.GCP_TEST_IMAGE ? { images: { test: env.GCP_TEST_IMAGE } } : {}),
    ...(env.GCP_TEST_NETWORK ? { network: env.GCP_TEST_NETWORK } : {}),
    ...(env.GCP_TEST_SUBNETWORK ? { subnetwork: env.GCP_TEST_SUBNETWORK } : {}),
    ...(env.GCP_TEST_ADDRESS_MODE ? { addressMode: env.GCP_TEST_ADDRESS_MODE } : {}),
    ...(env.GCP_TEST_CREDENTIALS_FILE ? { credentialsFile: env.GCP_TEST_CREDENTIALS_FILE } : {}),
    ...(source ? { firewall: { enabled: true, sourceRanges: [source] } } : {}),
  };
}

const CLOUD_INIT_SECRET = 'CLOUDINIT-SENTINEL-real-project-2d7a';

async function poll<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

describe.skipIf(missing.length > 0)('a real Google Cloud project', () => {
  it('GCP: Check reports the project ready', async () => {
    const p = await createProvider(providerModule, 'gcp-test', config(), {});
    try {
      const [r] = await p.check!();
      expect(r?.reason, r?.message).toBe('Reachable');
    } finally {
      await p.close?.();
    }
  });

  it(
    'GCP: lifecycle: create, repeat, Running, listed, delete, gone, nothing left',
    async () => {
      const logs = createLogSink();
      const spans = createSpanRecorder();
      // GCP_TEST_LOG_LEVEL (`debug`, `trace`) prints the provider's lines at that level and above.
      const logger = teeLogger(logs.logger, consoleLogger(env.GCP_TEST_LOG_LEVEL));
      const provider: Provider = await createProvider(providerModule, 'gcp-test', config(), {
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
        allowedSources: [env.GCP_TEST_FIREWALL_SOURCE ?? '192.0.2.0/24'],
        placement: {
          zone: env.GCP_TEST_ZONE,
          machineType: env.GCP_TEST_MACHINE_TYPE ?? 'e2-micro',
          image: env.GCP_TEST_IMAGE ? 'test' : 'ubuntu-2404',
        },
      };
      let id: string | undefined;
      try {
        id = await provider.create(req);
        expect(id).toBe(`zones/${env.GCP_TEST_ZONE}/instances/${name}`);
        expect(await provider.create(req)).toBe(id);
        const running = await poll('Running', async () => {
          const inst = await provider.get(id as string);
          return inst.state === 'Running' ? inst : undefined;
        });
        expect(running.uid).toBe(uid);
        expect(running.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
        if (env.GCP_TEST_KEEP === '1') return;
        await provider.delete(id, { uid });
        await poll('NotFound', async () => {
          const err = await provider.get(id as string).then(
            () => undefined,
            (e: unknown) => e,
          );
          if (err === undefined) return undefined;
          if (!isNotFound(err)) throw new Error(`Get after Delete: ${errorClassOf(err)}`);
          return true;
        });
        await provider.delete(id);
        expect((await provider.listByTag()).map((i) => i.id)).not.toContain(id);
        if (env.GCP_TEST_FIREWALL_SOURCE) {
          const { FirewallsClient } = await import('@google-cloud/compute');
          const rules = new FirewallsClient(
            env.GCP_TEST_CREDENTIALS_FILE ? { keyFilename: env.GCP_TEST_CREDENTIALS_FILE } : {},
          );
          const rule = firewallName(parseId(id) as { zone: string; name: string });
          const found = await rules
            .get({ project: env.GCP_TEST_PROJECT as string, firewall: rule })
            .then(
              () => true,
              () => false,
            );
          await rules.close();
          expect(found, `firewall rule ${rule} left behind`).toBe(false);
        }
        const create = spans.spans().find((s) => s.name === 'provider.create');
        const children = spans
          .spans()
          .filter((s) => s.parentSpanContext?.spanId === create?.spanContext().spanId);
        expect(children.map((s) => s.name)).toContain('gcp.insertInstance');
        expect(leakedIn(logs.text(), CLOUD_INIT_SECRET)).toBeUndefined();
        expect(leakedIn(spans.text(), CLOUD_INIT_SECRET)).toBeUndefined();
      } finally {
        if (id !== undefined && env.GCP_TEST_KEEP !== '1')
          await provider.delete(id).catch(() => {});
        await provider.close?.();
      }
    },
    timeoutMs * 2 + 60_000,
  );
});
