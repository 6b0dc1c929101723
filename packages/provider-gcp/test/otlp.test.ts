// Peers: the proxy-op command (the operator package's bin, running its built CLI) with this
// provider (test/fixtures/gcp-for-operator.mjs: the real @google-cloud/compute over REST and a
// real google-auth-library OAuth2 client), against the Compute double in this process
// (test/support/compute-double.ts, plain HTTP on 127.0.0.1, as every other test reaches it),
// exporting its spans by the standard OTEL_* variables over OTLP/HTTP (JSON) to the receiver of
// @proxy-op/testkit in this test.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { leakedIn } from '@proxy-op/providertest';
import {
  CLOUD_INIT_SENTINEL,
  lifecycleTrace,
  proxyOpCommand,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  startOtlpReceiver,
} from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { startComputeDouble } from './support/compute-double.js';

const PROVIDER = fileURLToPath(new URL('./fixtures/gcp-for-operator.mjs', import.meta.url));
const ZONE = 'us-central1-a';

describe('gcp traced over OTLP/HTTP by a proxy-op run', () => {
  it('puts the Compute calls of a Create and a Delete beneath provider.create and provider.delete, with no token or cloud-init in any span', async ({
    onTestFinished,
  }) => {
    const token = `ya29.otlp-SENTINEL-${randomBytes(12).toString('hex')}`;
    const receiver = await startOtlpReceiver();
    const double = await startComputeDouble({ tokens: [token] });
    const dir = await mkdtemp(join(tmpdir(), 'gcp-otlp-'));
    onTestFinished(async () => {
      await double.close();
      await receiver.close();
      await rm(dir, { recursive: true, force: true });
    });
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });

    const life = await runStandaloneLifecycle({
      cli: proxyOpCommand(import.meta.url),
      providers: {
        installation: 'trace-test',
        providers: [
          {
            name: 'gce',
            type: PROVIDER,
            gcp: {
              project: double.project,
              zones: [ZONE],
              endpoint: double.url,
              firewall: { enabled: true, sourceRanges: ['203.0.113.0/24'] },
            },
          },
        ],
      },
      spec: {
        provider: 'gce',
        port: 3128,
        placement: { zone: ZONE, machineType: 'e2-small', image: 'ubuntu-2404' },
        allowedSources: ['203.0.113.0/24'],
        cloudInit: SENTINEL_CLOUD_INIT,
      },
      env: { ...receiver.env, GCP_TEST_TOKEN_FILE: tokenFile },
    });
    console.info(`gcp: created in ${life.createMs} ms, deleted in ${life.deleteMs} ms`);
    expect(life.exit).toEqual({ code: 0, signal: null });
    const id = String(life.created.providerID);
    expect(id).toMatch(new RegExp(`^zones/${ZONE}/instances/`));
    double.settle();
    expect(double.instances.size).toBe(0);

    const trace = lifecycleTrace(receiver, life, {
      provider: 'gce',
      type: 'gcp',
      callPrefix: 'gcp.',
    });
    expect(trace.problems).toEqual([]);
    expect(trace.names.create).toEqual(
      expect.arrayContaining(['gcp.getInstance', 'gcp.insertInstance', 'gcp.insertFirewall']),
    );
    expect(trace.names.delete).toEqual(
      expect.arrayContaining(['gcp.deleteInstance', 'gcp.deleteFirewall']),
    );
    expect(leakedIn(receiver.text(), token)).toBeUndefined();
    expect(leakedIn(receiver.text(), CLOUD_INIT_SENTINEL)).toBeUndefined();
  }, 120_000);
});
