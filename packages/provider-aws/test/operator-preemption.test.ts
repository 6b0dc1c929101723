// Peers: the proxy-op command (the operator package's bin, running its built CLI) with this
// provider (test/fixtures/aws-for-operator.mjs: the built package over the real
// @aws-sdk/client-ec2, credentials from a mounted file), against the EC2 double in this process,
// which takes the Proxy's Spot Instance back as EC2 does (shutting-down, then terminated, with
// the state reason Server.SpotInstanceTermination).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { proxyOpCommand, runStandaloneLifecycle } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { clientToken } from '../src/tags.js';
import { startEc2Double, UBUNTU_AMI } from './support/ec2/double.js';
import { credentialsFileText } from './support/fixture.js';

const PROVIDER = fileURLToPath(new URL('./fixtures/aws-for-operator.mjs', import.meta.url));
const ZONE = 'eu-central-1a';

describe('a Spot Instance taken back under a running operator', () => {
  it('reads as Preempted, and the operator replaces it without a warning or a remediation', async ({
    onTestFinished,
  }) => {
    // EC2's eventual consistency stays on; the interruption is the test's, not the double's own.
    const double = await startEc2Double({ spotInterruption: false, terminateMs: 1500 });
    const dir = await mkdtemp(join(tmpdir(), 'aws-preempt-'));
    onTestFinished(async () => {
      await double.close();
      await rm(dir, { recursive: true, force: true });
    });
    const credentialsFile = join(dir, 'credentials');
    const [credential] = [...double.credentials.values()];
    await writeFile(credentialsFile, credentialsFileText(credential as never), { mode: 0o600 });
    let first = '';
    let second = '';

    const life = await runStandaloneLifecycle({
      cli: proxyOpCommand(import.meta.url),
      providers: {
        installation: 'preempt-test',
        providers: [
          {
            name: 'ec2',
            type: PROVIDER,
            aws: {
              region: double.region,
              vpcId: double.vpcId,
              subnets: { [ZONE]: double.subnetOf(ZONE).subnetId },
              images: { 'ubuntu-2404': UBUNTU_AMI },
              endpoint: double.url,
              credentialsFile,
              market: 'spot',
            },
          },
        ],
      },
      spec: {
        provider: 'ec2',
        port: 3128,
        placement: { zone: ZONE, machineType: 't3.micro', image: 'ubuntu-2404' },
        allowedSources: ['203.0.113.0/24'],
        cloudInit: '#cloud-config\n',
      },
      // A Ready Proxy's instance is read again every 300 ms, so the interruption is seen at once.
      args: ['--log-level', 'info', '--ready-resync', '300ms'],
      whileUp: async (run) => {
        expect(run.created).toMatchObject({
          state: 'Running',
          location: { region: 'eu-central-1', zone: ZONE, country: 'DE' },
        });
        const name = String(run.created.providerID).split('/').pop() as string;
        const [inst] = double.named(name);
        first = String(inst?.instanceId);
        const from = run.out.length;
        double.interrupt(inst as never);
        await run.waitFor('Preempted', (l) => l.state === 'Preempted', from);
        await run.waitFor('Ready again', (l) => l.phase === 'Ready' && l.state === 'Running', from);
        second = String(double.named(name).find((i) => i.state === 'running')?.instanceId);
      },
    });
    expect(life.exit).toEqual({ code: 0, signal: null });
    // A new Spot Instance of the same name, launched with the next client token, replaced it.
    expect(second).not.toBe('undefined');
    expect(second).not.toBe(first);
    const runs = double.requests.filter((r) => r.action === 'RunInstances');
    const uid = runs[0]?.params.TagSpecification as { Tag: { Key: string; Value: string }[] }[];
    const tags = Object.fromEntries((uid[0]?.Tag ?? []).map((t) => [t.Key, t.Value]));
    const name = String(tags.Name);
    expect(runs.map((r) => r.params.ClientToken)).toEqual([
      clientToken(String(tags['proxy-operator-uid']), name, 0),
      clientToken(String(tags['proxy-operator-uid']), name, 1),
    ]);
    const replaced = life.logs.filter((l) => l.msg === 'instance deleted; creating another');
    expect(replaced.map((l) => l.reason)).toEqual(['Preempted']);
    // Nothing about the Proxy read as a failure (no warning, no vanished instance).
    expect(life.logs.filter((l) => l.proxy !== undefined && Number(l.level) >= 40)).toEqual([]);
    expect(JSON.stringify(life.logs)).not.toContain('Remediating');
    // Everything went with the Proxy: no instance runs, no security group is left.
    expect(double.liveInstances()).toEqual([]);
    expect(double.groups.size).toBe(0);
  }, 120_000);
});
