// Peers: the proxy-op command (the operator package's bin, running its built CLI) with this
// provider (test/fixtures/proxmox-for-operator.mjs), against the HTTPS double of PVE in this
// process (test/support/https-fake.ts over the PVE model), exporting its spans by the standard
// OTEL_* variables over OTLP/HTTP (JSON) to the receiver of @proxy-op/testkit in this test.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leakedIn } from '@proxy-op/providertest';
import {
  CLOUD_INIT_SENTINEL,
  lifecycleTrace,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  startOtlpReceiver,
} from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { CLI, PROVIDER, proxmoxBlock } from './support/cli.js';
import { TOKEN_LINE, TOKEN_SENTINEL } from './support/fixture.js';
import { startHttpsFake } from './support/https-fake.js';
import { fastTiming, PveModel } from './support/pve-model.js';

describe('proxmox traced over OTLP/HTTP by a proxy-op run', () => {
  it('puts the HTTP calls of a Create and a Delete beneath provider.create and provider.delete, with no token or cloud-init in any span', async ({
    onTestFinished,
  }) => {
    const receiver = await startOtlpReceiver();
    const model = new PveModel({ token: TOKEN_LINE, timing: fastTiming(20) });
    model.addTemplate(9001);
    const fake = await startHttpsFake(model);
    const dir = await mkdtemp(join(tmpdir(), 'pve-otlp-'));
    onTestFinished(async () => {
      await fake.close();
      await receiver.close();
      await rm(dir, { recursive: true, force: true });
    });
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN_LINE}\n`, { mode: 0o600 });

    const life = await runStandaloneLifecycle({
      cli: CLI,
      providers: {
        installation: 'trace-test',
        providers: [
          {
            name: 'pve',
            type: PROVIDER,
            proxmox: proxmoxBlock({ url: fake.url, caFile: fake.pki.caFile, tokenFile }),
          },
        ],
      },
      spec: {
        provider: 'pve',
        port: 3128,
        placement: { machineType: 'small', image: 'debian-13' },
        allowedSources: ['10.0.0.0/8'],
        cloudInit: SENTINEL_CLOUD_INIT,
      },
      env: { ...receiver.env, PROXMOX_TEST_POLL_MS: '50' },
    });
    console.info(`proxmox: created in ${life.createMs} ms, deleted in ${life.deleteMs} ms`);
    expect(life.exit).toEqual({ code: 0, signal: null });
    const id = String(life.created.providerID);
    expect(id).toMatch(/^vms\/\d+\//);
    expect(model.guests()).toEqual([]);

    const trace = lifecycleTrace(receiver, life, {
      provider: 'pve',
      type: 'proxmox',
      callPrefix: 'HTTP ',
    });
    expect(trace.problems).toEqual([]);
    const vmid = id.split('/')[1];
    const calls = (op: 'create' | 'delete') =>
      trace.calls[op].map((c) => `${c.name} ${String(c.attributes['url.path'])}`);
    expect(calls('create')).toEqual(
      expect.arrayContaining([
        'HTTP POST /api2/json/nodes/pv1-1/qemu/9001/clone',
        `HTTP POST /api2/json/nodes/pv1-1/qemu/${vmid}/status/start`,
      ]),
    );
    expect(calls('delete')).toEqual(
      expect.arrayContaining([`HTTP DELETE /api2/json/nodes/pv1-1/qemu/${vmid}`]),
    );
    expect(leakedIn(receiver.text(), TOKEN_SENTINEL)).toBeUndefined();
    expect(leakedIn(receiver.text(), CLOUD_INIT_SENTINEL)).toBeUndefined();
  }, 60_000);
});
