// Peers: the proxy-op command (the operator package's bin, running its built CLI) with this
// provider (test/fixtures/gcp-for-operator.mjs: the real @google-cloud/compute over REST and a
// real google-auth-library OAuth2 client), against the Compute double in this process, which
// takes the Proxy's Spot instance back as Compute Engine does.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { proxyOpCommand, runStandaloneLifecycle } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { startComputeDouble } from './support/compute-double.js';

const PROVIDER = fileURLToPath(new URL('./fixtures/gcp-for-operator.mjs', import.meta.url));
const ZONE = 'europe-west3-a';

describe('a Spot instance taken back under a running operator', () => {
  it('reads as Preempted, and the operator replaces it without a warning or a remediation', async ({
    onTestFinished,
  }) => {
    const token = 'ya29.preemption-test-token';
    const double = await startComputeDouble({ tokens: [token], zones: [ZONE] });
    const dir = await mkdtemp(join(tmpdir(), 'gcp-preempt-'));
    onTestFinished(async () => {
      await double.close();
      await rm(dir, { recursive: true, force: true });
    });
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    let firstCreated = '';
    let secondCreated = '';

    const life = await runStandaloneLifecycle({
      cli: proxyOpCommand(import.meta.url),
      providers: {
        installation: 'preempt-test',
        providers: [
          {
            name: 'gce',
            type: PROVIDER,
            gcp: {
              project: double.project,
              zones: [ZONE],
              endpoint: double.url,
              scheduling: { provisioningModel: 'SPOT' },
            },
          },
        ],
      },
      spec: {
        provider: 'gce',
        port: 3128,
        placement: { zone: ZONE, machineType: 'e2-small', image: 'ubuntu-2404' },
        allowedSources: ['203.0.113.0/24'],
        cloudInit: '#cloud-config\n',
      },
      env: { GCP_TEST_TOKEN_FILE: tokenFile },
      // A Ready Proxy's instance is read again every 300 ms, so the preemption is seen at once.
      args: ['--log-level', 'info', '--ready-resync', '300ms'],
      whileUp: async (run) => {
        expect(run.created).toMatchObject({
          state: 'Running',
          location: { region: 'europe-west3', zone: ZONE, country: 'DE' },
        });
        const id = String(run.created.providerID);
        const key = `${ZONE}/${id.split('/').pop()}`;
        firstCreated = String(double.instances.get(key)?.creationTimestamp);
        const from = run.out.length;
        double.preempt(key);
        await run.waitFor('Preempted', (l) => l.state === 'Preempted', from);
        await run.waitFor('Ready again', (l) => l.phase === 'Ready' && l.state === 'Running', from);
        secondCreated = String(double.instances.get(key)?.creationTimestamp);
      },
    });
    expect(life.exit).toEqual({ code: 0, signal: null });
    // A new instance of the same name replaced the one taken back.
    const inserts = double.requests.filter((r) =>
      /^POST \S+\/zones\/[^/]+\/instances(\?|$)/.test(r),
    );
    expect(inserts).toHaveLength(2);
    expect(secondCreated).not.toBe('undefined');
    const replaced = life.logs.filter((l) => l.msg === 'instance deleted; creating another');
    expect(replaced.map((l) => l.reason)).toEqual(['Preempted']);
    // Nothing about the Proxy read as a failure (no warning, no vanished instance).
    expect(life.logs.filter((l) => l.proxy !== undefined && Number(l.level) >= 40)).toEqual([]);
    expect(JSON.stringify(life.logs)).not.toContain('Remediating');
    expect(firstCreated).not.toBe('undefined');
  }, 120_000);
});
