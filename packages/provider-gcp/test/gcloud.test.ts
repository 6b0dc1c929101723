// Peer: the real gcloud CLI (Google Cloud SDK, on the machine image) against the Compute API
// double through its endpoint override, side by side with the provider over the real
// @google-cloud/compute client. The double must answer gcloud's own requests (the zone and
// project look-ups of `instances create`, `operations/<op>/wait`, aggregated listings with
// partial success) the way the real API does, and both clients must read each other's resources.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isNotFound, type Provider } from '@proxy-op/contract';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { firewallName } from '../src/build.js';
import { type ComputeDouble, quotaFailure } from './support/compute-double.js';
import { createGcpFixture, type GcpFixture } from './support/fixture.js';
import { WARM_MS, warmSdk } from './support/sdk.js';

const { afterAll, beforeAll, expect } = vitest;
/** gcloud takes seconds per command, tens of seconds on a busy machine. */
const it = (name: string, fn: () => Promise<void>) => vitest.it(name, fn, 240_000);

describeWithPeers(vitest, 'gcloud against the Compute API double', ['gcloud'], () => {
  let fx: GcpFixture;
  let double: ComputeDouble;
  let provider: Provider;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const zone = 'us-central1-a';
  const userData = '#cloud-config\nruncmd: [echo "made by gcloud"]\n';

  beforeAll(async () => {
    await warmSdk();
    fx = await createGcpFixture({});
    double = fx.double;
    provider = fx.provider;
    dir = mkdtempSync(join(tmpdir(), 'gcloud-double-'));
    const token = [...double.tokens][0] as string;
    writeFileSync(join(dir, 'token'), token, { mode: 0o600 });
    writeFileSync(join(dir, 'user-data'), userData);
    env = {
      CLOUDSDK_CONFIG: join(dir, 'config'),
      CLOUDSDK_CORE_PROJECT: double.project,
      CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE: `${double.url}/compute/v1/`,
      CLOUDSDK_AUTH_ACCESS_TOKEN_FILE: join(dir, 'token'),
      CLOUDSDK_CORE_CHECK_GCE_METADATA: 'false',
      CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
      CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK: '1',
      CLOUDSDK_CORE_DISABLE_USAGE_REPORTING: 'true',
    };
  }, WARM_MS);

  afterAll(async () => {
    await fx?.cleanup?.();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const gcloud = async (...args: string[]) => {
    const from = double.requests.length;
    const r = await runProcess('gcloud', args, { env, timeoutMs: 90_000 });
    return { ...r, requests: double.requests.slice(from).map((x) => x.replace(/\?.*$/, '')) };
  };

  it('instances create: looks up the zone and the project, inserts, waits on the operation', async () => {
    const r = await gcloud(
      'compute',
      'instances',
      'create',
      'vm-gcloud',
      `--zone=${zone}`,
      '--machine-type=e2-small',
      '--image-family=ubuntu-2404-lts-amd64',
      '--image-project=ubuntu-os-cloud',
      '--labels=proxy-operator-managed=true,proxy-operator-uid=uid-from-gcloud',
      `--metadata-from-file=user-data=${join(dir, 'user-data')}`,
      '--tags=proxy-op',
      '--format=json',
    );
    expect(r.code, r.stderr).toBe(0);
    const p = `/compute/v1/projects/${double.project}`;
    expect(r.requests.slice(0, 4)).toEqual([
      `GET ${p}/zones/${zone}`,
      `GET ${p}`,
      `POST ${p}/zones/${zone}/instances`,
      expect.stringMatching(
        new RegExp(`^POST ${p}/zones/${zone}/operations/operation-[^/]+/wait$`),
      ),
    ]);
    const [made] = JSON.parse(r.stdout) as [Record<string, unknown>];
    expect(made.status).toBe('RUNNING');
    expect(made.labels).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': 'uid-from-gcloud',
    });
    expect((made.metadata as { items: unknown[] }).items).toEqual([
      { key: 'user-data', value: userData },
    ]);
  });

  it('the provider reads what gcloud made: Get and ListByTag', async () => {
    const id = `zones/${zone}/instances/vm-gcloud`;
    const got = await provider.get(id);
    expect(got.uid).toBe('uid-from-gcloud');
    expect(got.state).toBe('Running');
    expect(got.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
  });

  it('gcloud reads what the provider made: instance, labels, user-data, disk, firewall rule', async () => {
    const cloudInit = '#cloud-config\nwrite_files: []\n';
    const id = await provider.create({
      name: 'proxy-made',
      namespace: 'default',
      uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
      port: 3128,
      cloudInit: new TextEncoder().encode(cloudInit),
      allowedSources: ['192.0.2.0/24'],
      placement: { zone, machineType: 'e2-small', image: 'ubuntu-2404' },
      installation: 'inst-1',
    });
    expect(id).toBe(`zones/${zone}/instances/proxy-made`);
    double.settle();
    const d = await gcloud(
      'compute',
      'instances',
      'describe',
      'proxy-made',
      `--zone=${zone}`,
      '--format=json',
    );
    expect(d.code, d.stderr).toBe(0);
    const inst = JSON.parse(d.stdout) as {
      labels: Record<string, string>;
      metadata: { items: { key: string; value: string }[] };
      tags: { items: string[] };
      disks: { boot: boolean; autoDelete: boolean }[];
      networkInterfaces: { accessConfigs: { type: string; natIP: string }[] }[];
      machineType: string;
    };
    expect(inst.labels).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
      'proxy-operator-installation': 'inst-1',
    });
    expect(inst.metadata.items).toEqual([{ key: 'user-data', value: cloudInit }]);
    expect(inst.tags.items).toEqual(['proxy-op', firewallName({ zone, name: 'proxy-made' })]);
    expect(inst.disks.map((x) => [x.boot, x.autoDelete])).toEqual([[true, true]]);
    expect(inst.networkInterfaces[0]?.accessConfigs[0]?.type).toBe('ONE_TO_ONE_NAT');
    expect(inst.machineType).toMatch(/\/zones\/us-central1-a\/machineTypes\/e2-small$/);

    const rule = firewallName({ zone, name: 'proxy-made' });
    const f = await gcloud('compute', 'firewall-rules', 'describe', rule, '--format=json');
    expect(f.code, f.stderr).toBe(0);
    const fw = JSON.parse(f.stdout) as Record<string, unknown>;
    expect(fw.sourceRanges).toEqual(['192.0.2.0/24']);
    expect(fw.targetTags).toEqual([rule]);
    expect(fw.allowed).toEqual([{ IPProtocol: 'tcp', ports: ['3128'] }]);
    expect(fw.direction).toBe('INGRESS');
  });

  it('instances list: both instances, and a zone that does not answer is reported, not fatal', async () => {
    double.plantInstance('us-central1-b', 'vm-far', { status: 'RUNNING', natIP: '198.51.100.3' });
    double.isolated.add('us-central1-b');
    try {
      const r = await gcloud(
        'compute',
        'instances',
        'list',
        '--format=value(name,zone.basename(),status)',
      );
      expect(r.code, r.stderr).toBe(0);
      const rows = r.stdout.trim().split('\n').sort();
      expect(rows).toEqual([`proxy-made\t${zone}\tRUNNING`, `vm-gcloud\t${zone}\tRUNNING`]);
      expect(r.stderr).toContain("The scope 'zones/us-central1-b' is unreachable.");
      expect(r.requests).toEqual([
        `GET /compute/v1/projects/${double.project}/aggregated/instances`,
      ]);
      const listed = await provider.listByTag({ installation: 'inst-1' });
      expect(listed.map((i) => i.id)).toEqual([`zones/${zone}/instances/proxy-made`]);
    } finally {
      double.isolated.clear();
    }
  });

  it('instances delete: the provider then finds the instance gone', async () => {
    const r = await gcloud(
      'compute',
      'instances',
      'delete',
      'proxy-made',
      `--zone=${zone}`,
      '--quiet',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.requests).toEqual([
      `DELETE /compute/v1/projects/${double.project}/zones/${zone}/instances/proxy-made`,
      expect.stringMatching(/\/operations\/operation-[^/]+\/wait$/),
    ]);
    expect(await provider.get(`zones/${zone}/instances/proxy-made`).catch(isNotFound)).toBe(true);
    await provider.delete(`zones/${zone}/instances/proxy-made`);
    const f = await gcloud('compute', 'firewall-rules', 'list', '--format=value(name)');
    expect(f.stdout).not.toContain(firewallName({ zone, name: 'proxy-made' }));
  });

  it('an insert that fails after acceptance: gcloud prints the quota, the provider’s Get reports it', async () => {
    double.insertFailure = { failure: quotaFailure('us-central1'), when: 'later', times: 1 };
    const r = await gcloud(
      'compute',
      'instances',
      'create',
      'vm-over-quota',
      `--zone=${zone}`,
      '--machine-type=e2-small',
      '--image-family=ubuntu-2404-lts-amd64',
      '--image-project=ubuntu-os-cloud',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Quota 'CPUS' exceeded.  Limit: 8.0 in region us-central1.");
    expect(r.stderr).toContain('metric name = compute.googleapis.com/cpus');
    const err = await provider.get(`zones/${zone}/instances/vm-over-quota`).catch((e) => e);
    expect(err.code).toBe('PROVIDER_QUOTA_EXCEEDED');
    expect(err.message).toContain(
      "QUOTA_EXCEEDED: Quota 'CPUS' exceeded.  Limit: 8.0 in region us-central1.",
    );
  });
  it('a Spot instance gcloud made, taken back: gcloud lists the preemption, the provider reads Preempted', async () => {
    const r = await gcloud(
      'compute',
      'instances',
      'create',
      'vm-spot',
      `--zone=${zone}`,
      '--machine-type=e2-small',
      '--image-family=ubuntu-2404-lts-amd64',
      '--image-project=ubuntu-os-cloud',
      '--provisioning-model=SPOT',
      '--instance-termination-action=STOP',
      '--labels=proxy-operator-managed=true,proxy-operator-uid=uid-spot',
      '--format=json',
    );
    expect(r.code, r.stderr).toBe(0);
    const d = await gcloud(
      'compute',
      'instances',
      'describe',
      'vm-spot',
      `--zone=${zone}`,
      '--format=json(scheduling)',
    );
    expect(d.code, d.stderr).toBe(0);
    // What gcloud asks for a Spot instance, as the double keeps it.
    expect(JSON.parse(d.stdout).scheduling).toEqual({
      automaticRestart: false,
      instanceTerminationAction: 'STOP',
      onHostMaintenance: 'TERMINATE',
      preemptible: false,
      provisioningModel: 'SPOT',
    });
    const id = `zones/${zone}/instances/vm-spot`;
    expect((await provider.get(id)).state).toBe('Running');
    double.preempt(`${zone}/vm-spot`);
    const ops = await gcloud(
      'compute',
      'operations',
      'list',
      '--filter=operationType=compute.instances.preempted',
      '--format=value(targetLink.basename(),status)',
    );
    expect(ops.code, ops.stderr).toBe(0);
    expect(ops.requests).toEqual([
      `GET /compute/v1/projects/${double.project}/aggregated/operations`,
    ]);
    expect(ops.stdout.trim()).toBe('vm-spot\tDONE');
    const got = await provider.get(id);
    expect(got.state).toBe('Preempted');
    expect(got.location).toEqual({ region: 'us-central1', zone, country: 'US' });
    const listed = (await provider.listByTag()).find((i) => i.id === id);
    expect(listed?.state).toBe('Preempted');
    await provider.delete(id);
  });
});
