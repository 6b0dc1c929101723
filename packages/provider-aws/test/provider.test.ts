// Peer: the real @aws-sdk/client-ec2 against the EC2 double on 127.0.0.1 (wire level). What the
// provider sends EC2 (one RunInstances with IMDSv2 only, the tags, the user data, the client
// token, Spot options; a security group with exactly the allowed sources), how many calls each
// operation costs, and how it reads EC2's eventual consistency, Spot interruptions, ended
// instances and refusals.
import { rm } from 'node:fs/promises';
import { createProvider, isNotFound, type Provider, type ProviderError } from '@proxy-op/contract';
import { createLogSink, leakedIn } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { providerModule } from '../src/index.js';
import { clientToken } from '../src/tags.js';
import { DEBIAN_AMI, type Ec2DoubleOptions, UBUNTU_AMI } from './support/ec2/double.js';
import type { Params } from './support/ec2/wire.js';
import { type AwsFixture, createAwsFixture } from './support/fixture.js';

const fixtures: AwsFixture[] = [];
afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

/** A fixture whose double has eventual consistency and Spot interruptions off unless asked. */
async function fixture(
  o: { double?: Ec2DoubleOptions; config?: Record<string, unknown> } = {},
): Promise<AwsFixture> {
  const fx = await createAwsFixture(
    {},
    { double: { consistencyMs: 0, spotInterruption: false, ...o.double }, config: o.config ?? {} },
  );
  fixtures.push(fx);
  return fx;
}

const UID = '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11';
const CLOUD_INIT = '#cloud-config\npackages: [squid]\n';

function request(fx: AwsFixture, patch: Record<string, unknown> = {}) {
  return {
    name: 'proxy-web-1',
    uid: UID,
    cloudInit: new TextEncoder().encode(CLOUD_INIT),
    ...fx.harness.baseRequest,
    ...patch,
  } as Parameters<Provider['create']>[0];
}

const actions = (fx: AwsFixture, from = 0) => fx.double.requests.slice(from).map((r) => r.action);
const last = (fx: AwsFixture, action: string): Params =>
  fx.double.requests.filter((r) => r.action === action).at(-1)?.params ?? {};
const tagsOf = (spec: Params) =>
  Object.fromEntries(
    ((spec.Tag as Params[]) ?? []).map((t) => [String(t.Key), String(t.Value ?? '')]),
  );

describe('Create', () => {
  it('launches one instance in one call: subnet, group, user data, tags, IMDSv2 only, a client token from the UID and name', async () => {
    const fx = await fixture();
    const id = await fx.provider.create(request(fx));
    expect(id).toBe('regions/eu-central-1/instances/proxy-web-1');
    expect(actions(fx)).toEqual([
      'DescribeInstances',
      'DescribeSecurityGroups',
      'CreateSecurityGroup',
      'AuthorizeSecurityGroupIngress',
      'RunInstances',
    ]);
    const run = last(fx, 'RunInstances');
    const group = [...fx.double.groups.values()][0];
    expect(run).toMatchObject({
      ImageId: UBUNTU_AMI,
      InstanceType: 't3.micro',
      MinCount: '1',
      MaxCount: '1',
      ClientToken: clientToken(UID, 'proxy-web-1', 0),
      MetadataOptions: {
        HttpTokens: 'required',
        HttpPutResponseHopLimit: '1',
        HttpEndpoint: 'enabled',
      },
      NetworkInterface: [
        {
          DeviceIndex: '0',
          SubnetId: fx.double.subnetOf('eu-central-1a').subnetId,
          SecurityGroupId: [group?.groupId],
          AssociatePublicIpAddress: 'true',
          DeleteOnTermination: 'true',
        },
      ],
    });
    expect(run.InstanceMarketOptions).toBeUndefined();
    expect(Buffer.from(String(run.UserData), 'base64').toString()).toBe(CLOUD_INIT);
    const specs = run.TagSpecification as Params[];
    expect(specs.map((s) => s.ResourceType)).toEqual(['instance', 'volume', 'network-interface']);
    for (const s of specs) {
      expect(tagsOf(s)).toEqual({
        Name: 'proxy-web-1',
        'proxy-operator-managed': 'true',
        'proxy-operator-uid': UID,
        'proxy-operator-installation': 'default',
        'proxy-operator-created-at': expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      });
    }
    // The group opens the proxy port to the allowed sources, nothing else, and carries the mark.
    expect(group?.groupName).toBe('proxy-op-proxy-web-1');
    expect(group?.ingress.map((r) => [r.protocol, r.fromPort, r.toPort, r.cidr])).toEqual([
      ['tcp', 3128, 3128, '203.0.113.0/24'],
      ['tcp', 3128, 3128, '2001:db8:100::/48'],
    ]);
    expect(Object.fromEntries(group?.tags ?? [])).toMatchObject({
      'proxy-operator-uid': UID,
      Name: 'proxy-web-1',
    });
  });

  it('a Spot launch asks for a one-time Spot Instance that terminates when EC2 takes it back', async () => {
    const fx = await fixture({ config: { market: 'spot', spotMaxPrice: '0.0125' } });
    await fx.provider.create(request(fx));
    const run = last(fx, 'RunInstances');
    expect(run.InstanceMarketOptions).toEqual({
      MarketType: 'spot',
      SpotOptions: {
        SpotInstanceType: 'one-time',
        InstanceInterruptionBehavior: 'terminate',
        MaxPrice: '0.0125',
      },
    });
    expect((run.TagSpecification as Params[]).map((s) => s.ResourceType)).toContain(
      'spot-instances-request',
    );
    expect([...fx.double.instances.values()][0]?.spot).toBeDefined();
  });

  it('a repeat is one call and launches nothing; bare sources become /32 and /128', async () => {
    const fx = await fixture();
    const req = request(fx, { allowedSources: ['198.51.100.7', '2001:db8::7'] });
    const id = await fx.provider.create(req);
    const from = fx.double.requests.length;
    expect(await fx.provider.create(req)).toBe(id);
    expect(actions(fx, from)).toEqual(['DescribeInstances']);
    expect([...fx.double.groups.values()][0]?.ingress.map((r) => r.cidr)).toEqual([
      '198.51.100.7/32',
      '2001:db8::7/128',
    ]);
  });

  it('refuses before any call: user data over 16 KiB, no source at all', async () => {
    const fx = await fixture();
    const big = await fx.provider
      .create(request(fx, { cloudInit: new Uint8Array(16 * 1024 + 1) }))
      .catch((e: unknown) => e);
    expect((big as ProviderError).errorClass).toBe('Permanent');
    expect((big as Error).message).toContain('cloudInit is 16385 bytes');
    const req = request(fx);
    delete (req as { allowedSources?: unknown }).allowedSources;
    const open = await fx.provider.create(req).catch((e: unknown) => e);
    expect((open as Error).message).toContain('no allowed source');
    expect(fx.double.requests).toEqual([]);
  });

  it('the configured sources when the request names none', async () => {
    const fx = await fixture({
      config: {
        securityGroup: { sourceRanges: ['192.0.2.0/24'], extraGroupIds: ['sg-0aaaaaaaaaaaaaaaa'] },
      },
    });
    const req = request(fx);
    delete (req as { allowedSources?: unknown }).allowedSources;
    // The extra group must exist for EC2 to launch.
    fx.double.groups.set('sg-0aaaaaaaaaaaaaaaa', {
      groupId: 'sg-0aaaaaaaaaaaaaaaa',
      groupName: 'ssh-from-bastion',
      description: 'x',
      vpcId: fx.double.vpcId,
      tags: new Map(),
      ingress: [],
    });
    await fx.provider.create(req);
    const group = [...fx.double.groups.values()].find(
      (g) => g.groupName === 'proxy-op-proxy-web-1',
    );
    expect(group?.ingress.map((r) => r.cidr)).toEqual(['192.0.2.0/24']);
    const nic = (last(fx, 'RunInstances').NetworkInterface as Params[])[0];
    expect(nic?.SecurityGroupId).toEqual([group?.groupId, 'sg-0aaaaaaaaaaaaaaaa']);
  });

  it('an AMI EC2 refuses is Permanent naming placement.image and the config key, and leaves no group', async () => {
    const fx = await fixture();
    fx.double.images.delete(UBUNTU_AMI);
    const err = (await fx.provider.create(request(fx)).catch((e: unknown) => e)) as ProviderError;
    expect(err.errorClass).toBe('Permanent');
    expect(err.message).toContain(
      `placement.image "ubuntu-2404": aws.images.ubuntu-2404 is ${UBUNTU_AMI}`,
    );
    expect(err.message).toContain('InvalidAMIID.NotFound');
    expect(fx.double.groups.size).toBe(0);
  });

  it('a subnet EC2 refuses is Permanent naming placement.zone', async () => {
    const fx = await fixture();
    fx.double.subnets.delete(fx.double.subnetOf('eu-central-1a').subnetId);
    const err = (await fx.provider.create(request(fx)).catch((e: unknown) => e)) as ProviderError;
    expect(err.errorClass).toBe('Permanent');
    expect(err.message).toContain(
      'placement.zone "eu-central-1a": aws.subnets.eu-central-1a is subnet-',
    );
    expect(err.message).toContain('InvalidSubnetID.NotFound');
  });

  it('a launch that is not allowed is Permanent naming ec2:RunInstances, without the encoded message', async () => {
    const fx = await fixture();
    fx.double.denied.add('RunInstances');
    const err = (await fx.provider.create(request(fx)).catch((e: unknown) => e)) as ProviderError;
    expect(err.errorClass).toBe('Permanent');
    expect(err.message).toContain('ec2:RunInstances failed: UnauthorizedOperation');
    expect(err.message).not.toContain('Encoded authorization failure message');
    expect(fx.double.groups.size).toBe(0);
  });

  it('limits and capacity are QuotaExceeded', async () => {
    const fx = await fixture();
    fx.double.vcpuLimit = 1;
    const err = (await fx.provider.create(request(fx)).catch((e: unknown) => e)) as ProviderError;
    expect([err.errorClass, (err.cause as { ec2Code?: string }).ec2Code]).toEqual([
      'QuotaExceeded',
      'VcpuLimitExceeded',
    ]);
  });

  it('after an instance ended, the next one gets the next client token (EC2 remembers the old one)', async () => {
    const fx = await fixture({ double: { terminateMs: 10 } });
    const req = request(fx);
    const id = await fx.provider.create(req);
    const first = fx.instanceOf(id);
    await fx.provider.delete(id);
    fx.double.settle();
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    // An hour later EC2 lists it no more, and only its client token says it was there.
    fx.double.forget(first);
    const from = fx.double.requests.length;
    expect(await fx.provider.create(req)).toBe(id);
    const runs = fx.double.requests.slice(from).filter((r) => r.action === 'RunInstances');
    expect(runs.map((r) => r.params.ClientToken)).toEqual([
      clientToken(UID, req.name, 0),
      clientToken(UID, req.name, 1),
    ]);
    expect(fx.double.liveInstances()).toHaveLength(1);
  });

  it('a retry a second after a cancelled launch that EC2 carried out adopts that launch (its tags differ)', async () => {
    const fx = await fixture({ double: { consistencyMs: 2500 } });
    const req = request(fx);
    const gate = fx.double.blockCalls(4);
    const ac = new AbortController();
    const first = fx.provider.create(req, { signal: ac.signal });
    await gate.reached;
    ac.abort();
    expect(((await first.catch((e: unknown) => e)) as ProviderError).errorClass).toBe('Transient');
    gate.release();
    // The retry's creation time is another second, so its RunInstances differs from the first.
    await new Promise((r) => setTimeout(r, 1100));
    const from = fx.double.requests.length;
    const id = await fx.provider.create(req);
    expect(fx.double.liveInstances()).toHaveLength(1);
    const calls = fx.double.requests.slice(from);
    expect(
      calls.filter((r) => r.action === 'RunInstances').map((r) => r.params.ClientToken),
    ).toEqual([clientToken(UID, req.name, 0)]);
    expect(calls.some((r) => JSON.stringify(r.params.Filter ?? '').includes('client-token'))).toBe(
      true,
    );
    expect((await fx.provider.get(id)).uid).toBe(UID);
  });

  it('a group left behind is taken over: its rules set to the sources asked, its UID to the Proxy’s', async () => {
    const fx = await fixture({ double: { terminateMs: 10 } });
    const id = await fx.provider.create(request(fx));
    // Someone terminated the instance; nobody read it since, so its group is still there.
    fx.double.terminateByUser(fx.instanceOf(id));
    fx.double.settle();
    await fx.provider.create(request(fx, { uid: 'uid-2', allowedSources: ['192.0.2.0/24'] }));
    const group = [...fx.double.groups.values()];
    expect(group).toHaveLength(1);
    expect(group[0]?.ingress.map((r) => r.cidr)).toEqual(['192.0.2.0/24']);
    expect(group[0]?.tags.get('proxy-operator-uid')).toBe('uid-2');
    expect((await fx.provider.get(id)).uid).toBe('uid-2');
  });

  it('a group of the name that proxy-op did not make is Permanent', async () => {
    const fx = await fixture();
    fx.double.groups.set('sg-0bbbbbbbbbbbbbbbb', {
      groupId: 'sg-0bbbbbbbbbbbbbbbb',
      groupName: 'proxy-op-proxy-web-1',
      description: 'x',
      vpcId: fx.double.vpcId,
      tags: new Map(),
      ingress: [],
    });
    const err = (await fx.provider.create(request(fx)).catch((e: unknown) => e)) as ProviderError;
    expect(err.errorClass).toBe('Permanent');
    expect(err.message).toContain(
      'security group proxy-op-proxy-web-1 (sg-0bbbbbbbbbbbbbbbb) exists',
    );
  });
});

describe('eventual consistency just after a launch (on, as EC2 behaves)', () => {
  it('Get waits for a launch EC2 does not show yet, and answers with it', async () => {
    const fx = await fixture({ double: { consistencyMs: 400 } });
    const id = await fx.provider.create(request(fx));
    const got = await fx.provider.get(id);
    expect(got.uid).toBe(UID);
    expect(fx.double.requests.map((r) => r.action)).toContain('DescribeInstances');
    const byId = fx.double.requests.filter(
      (r) => r.action === 'DescribeInstances' && r.params.InstanceId !== undefined,
    );
    expect(byId.length).toBeGreaterThan(0);
  });

  it('Get and Delete are Transient, never NotFound, while EC2 still does not show it', async () => {
    const fx = await fixture({
      double: { consistencyMs: 10_000 },
      config: { consistency: { windowMs: 60_000, waitMs: 200 } },
    });
    const id = await fx.provider.create(request(fx));
    const get = (await fx.provider.get(id).catch((e: unknown) => e)) as ProviderError;
    expect(get.errorClass).toBe('Transient');
    expect(get.message).toContain('EC2 does not show it yet');
    const del = (await fx.provider.delete(id).catch((e: unknown) => e)) as ProviderError;
    expect(del.errorClass).toBe('Transient');
    expect(fx.double.liveInstances()).toHaveLength(1);
  });

  it('ListByTag includes this provider’s launch EC2 does not list yet', async () => {
    const fx = await fixture({ double: { consistencyMs: 300 } });
    const id = await fx.provider.create(request(fx));
    expect((await fx.provider.listByTag()).map((i) => i.id)).toEqual([id]);
  });
});

describe('Spot Instances EC2 takes back', () => {
  it('the double takes running Spot Instances back on its own by default, never On-Demand ones', async () => {
    const fx = await fixture({
      double: { spotInterruption: { minMs: 50, maxMs: 100 }, bootMs: 10 },
      config: { market: 'spot' },
    });
    const spot = await fx.provider.create(request(fx));
    const onDemand = fx.double.plant({ name: 'on-demand', state: 'running' });
    fx.double.boot(onDemand);
    await new Promise((r) => setTimeout(r, 400));
    expect((await fx.provider.get(spot)).state).toBe('Preempted');
    expect(onDemand.state).toBe('running');
  });

  it('Preempted through Get and ListByTag until Delete collects it, shutting down or terminated', async () => {
    const fx = await fixture({ config: { market: 'spot' }, double: { terminateMs: 60_000 } });
    const id = await fx.provider.create(request(fx));
    const inst = fx.instanceOf(id);
    fx.double.boot(inst);
    fx.double.interrupt(inst);
    expect(await fx.provider.get(id)).toMatchObject({ state: 'Preempted', ip: undefined });
    fx.double.settle();
    expect((await fx.provider.get(id)).state).toBe('Preempted');
    expect((await fx.provider.listByTag()).map((i) => [i.id, i.state])).toEqual([
      [id, 'Preempted'],
    ]);
    const from = fx.double.requests.length;
    await fx.provider.delete(id);
    expect(actions(fx, from)).toEqual([
      'DescribeInstances',
      'DescribeSecurityGroups',
      'DeleteSecurityGroup',
    ]);
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    expect(await fx.provider.listByTag()).toEqual([]);
  });

  it('Delete while EC2 is still taking it back tags it, so once terminated it is collected', async () => {
    const fx = await fixture({ config: { market: 'spot' }, double: { terminateMs: 60_000 } });
    const id = await fx.provider.create(request(fx));
    fx.double.interrupt(fx.instanceOf(id));
    await fx.provider.delete(id);
    expect(last(fx, 'CreateTags')).toMatchObject({ Tag: [{ Key: 'proxy-operator-deleted' }] });
    // Still Preempted while EC2 takes it back (the operator sees one state throughout).
    expect((await fx.provider.get(id)).state).toBe('Preempted');
    fx.double.settle();
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    expect(fx.double.groups.size).toBe(0);
  });
});

describe('Get, Delete and ListByTag', () => {
  it('Get of a running instance is one call; of one that is gone, two', async () => {
    const fx = await fixture({ double: { terminateMs: 10 } });
    const id = await fx.provider.create(request(fx));
    await fx.harness.setRunning(id, '203.0.113.77');
    let from = fx.double.requests.length;
    expect(await fx.provider.get(id)).toMatchObject({
      state: 'Running',
      ip: '203.0.113.77',
      location: { region: 'eu-central-1', zone: 'eu-central-1a', country: 'DE' },
    });
    expect(actions(fx, from)).toEqual(['DescribeInstances']);
    await fx.provider.delete(id);
    fx.double.settle();
    from = fx.double.requests.length;
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    // The first Get after the termination removes the group EC2 kept until then.
    expect(actions(fx, from)).toEqual([
      'DescribeInstances',
      'DescribeSecurityGroups',
      'DeleteSecurityGroup',
    ]);
    from = fx.double.requests.length;
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    expect(actions(fx, from)).toEqual(['DescribeInstances', 'DescribeSecurityGroups']);
  });

  it('private mode reports the private address; public mode the IPv6 address when there is no public IPv4 one', async () => {
    const priv = await fixture({ config: { addressMode: 'private' } });
    const a = await priv.provider.create(request(priv));
    expect(last(priv, 'RunInstances').NetworkInterface).toMatchObject([
      { AssociatePublicIpAddress: 'false' },
    ]);
    await priv.harness.setRunning(a, '203.0.113.5');
    expect((await priv.provider.get(a)).ip).toMatch(/^10\.0\.0\.\d+$/);
    const v6 = await fixture({ config: { ipv6: true } });
    const b = await v6.provider.create(request(v6));
    expect(last(v6, 'RunInstances').NetworkInterface).toMatchObject([{ Ipv6AddressCount: '1' }]);
    await v6.harness.setRunning(b, undefined);
    expect(await v6.provider.get(b)).toMatchObject({
      state: 'Running',
      ip: expect.stringMatching(/^2001:db8:/),
    });
  });

  it('an ID of another region is Permanent from Get and Delete, with no call', async () => {
    const fx = await fixture();
    const other = 'regions/us-east-1/instances/proxy-web-1';
    expect(
      ((await fx.provider.get(other).catch((e: unknown) => e)) as ProviderError).errorClass,
    ).toBe('Permanent');
    expect(
      ((await fx.provider.delete(other).catch((e: unknown) => e)) as ProviderError).message,
    ).toContain('configured for eu-central-1');
    expect(fx.double.requests).toEqual([]);
  });

  it('a group whose instance EC2 no longer lists is listed as Terminated, and Delete removes it', async () => {
    const fx = await fixture({ double: { terminateMs: 10 } });
    const id = await fx.provider.create(request(fx));
    await fx.provider.get(id);
    const inst = fx.instanceOf(id);
    fx.double.terminateByUser(inst);
    fx.double.settle();
    fx.double.forget(inst);
    expect((await fx.provider.listByTag()).map((i) => [i.id, i.state, i.uid])).toEqual([
      [id, 'Terminated', UID],
    ]);
    expect((await fx.provider.get(id)).state).toBe('Terminated');
    await fx.provider.delete(id, { uid: UID });
    expect(fx.double.groups.size).toBe(0);
    expect(await fx.provider.listByTag()).toEqual([]);
  });

  it('ListByTag is two calls: instances and groups, each filtered on the managed tag', async () => {
    const fx = await fixture();
    await fx.provider.create(request(fx));
    const from = fx.double.requests.length;
    await fx.provider.listByTag();
    expect(actions(fx, from)).toEqual(['DescribeInstances', 'DescribeSecurityGroups']);
    expect(last(fx, 'DescribeInstances').Filter).toEqual([
      { Name: 'tag:proxy-operator-managed', Value: ['true'] },
    ]);
    expect(last(fx, 'DescribeSecurityGroups').Filter).toEqual([
      { Name: 'tag:proxy-operator-managed', Value: ['true'] },
      { Name: 'vpc-id', Value: [fx.double.vpcId] },
    ]);
  });
});

describe('credentials', () => {
  it('the SDK’s default chain: keys from the environment, declared secret', async () => {
    const fx = await fixture();
    const [credential] = [...fx.double.credentials.values()];
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, key: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = credential?.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = credential?.secretAccessKey;
    const logs = createLogSink();
    const { credentialsFile: _file, ...config } = fx.config;
    let p: Provider | undefined;
    try {
      p = await createProvider(providerModule, 'aws-env', config, { logger: logs.logger });
      expect(await p.listByTag()).toEqual([]);
      fx.double.echoCredential = true;
      fx.double.credentials.clear();
      const err = await p.listByTag().catch((e: unknown) => e);
      expect((err as ProviderError).errorClass).toBe('Permanent');
      expect(
        leakedIn(JSON.stringify(err) + String(err), String(credential?.secretAccessKey)),
      ).toBeUndefined();
    } finally {
      process.env.AWS_ACCESS_KEY_ID = saved.id;
      process.env.AWS_SECRET_ACCESS_KEY = saved.key;
      if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      if (saved.key === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
      await p?.close?.();
    }
  });

  it('a credentials file that is not mounted yet is Transient; one without the profile Permanent', async () => {
    const fx = await fixture({ config: { credentialsProfile: 'proxy-op' } });
    const err = (await fx.provider.listByTag().catch((e: unknown) => e)) as ProviderError;
    expect([err.errorClass, (err.cause as { kind?: string }).kind]).toEqual([
      'Permanent',
      'invalid',
    ]);
    await rm(fx.credentialsFile);
    const missing = (await fx.provider.listByTag().catch((e: unknown) => e)) as ProviderError;
    expect([missing.errorClass, (missing.cause as { kind?: string }).kind]).toEqual([
      'Transient',
      'missing',
    ]);
  });
});

describe('the Checker', () => {
  it('six requests: subnets, AMIs, instance types, and three dry runs', async () => {
    const fx = await fixture();
    const [r] = (await fx.provider.check?.()) ?? [];
    expect(r).toMatchObject({ target: 'eu-central-1', reason: 'Reachable', ready: true });
    expect(r?.details).toMatchObject({
      subnets: 'ok',
      images: 'ok',
      instanceTypes: 'ok',
      permissions: 'ok',
      vpcId: fx.double.vpcId,
    });
    expect(actions(fx)).toEqual([
      'DescribeSubnets',
      'DescribeImages',
      'DescribeInstanceTypes',
      'RunInstances',
      'CreateSecurityGroup',
      'DescribeInstances',
    ]);
    expect(
      fx.double.requests
        .filter((q) => q.action === 'RunInstances' || q.action === 'CreateSecurityGroup')
        .every((q) => q.params.DryRun === 'true'),
    ).toBe(true);
    expect(fx.double.instances.size + fx.double.groups.size).toBe(0);
  });

  it('a permission that is missing is Forbidden, naming the action', async () => {
    const fx = await fixture();
    fx.double.denied.add('CreateSecurityGroup');
    const [r] = (await fx.provider.check?.()) ?? [];
    expect(r?.reason).toBe('Forbidden');
    expect(r?.message).toContain('ec2:CreateSecurityGroup is not allowed');
    expect(r?.message).not.toContain('Encoded authorization failure message');
  });

  it('a subnet in another zone than configured is SubnetNotFound', async () => {
    const fx = await fixture({
      config: { subnets: { 'eu-central-1a': 'subnet-02a2b3c4d5e6f7081' } },
    });
    const [r] = (await fx.provider.check?.()) ?? [];
    expect([r?.reason, r?.message]).toEqual([
      'SubnetNotFound',
      'subnets.eu-central-1a: subnet-02a2b3c4d5e6f7081 is in eu-central-1b, not eu-central-1a',
    ]);
  });

  it('an AMI that is not in the region is ImageNotFound', async () => {
    const fx = await fixture();
    fx.double.images.delete(DEBIAN_AMI);
    const [r] = (await fx.provider.check?.()) ?? [];
    expect(r?.reason).toBe('ImageNotFound');
    expect(r?.details).toMatchObject({
      subnets: 'ok',
      ec2Code: 'InvalidAMIID.NotFound',
      httpStatus: 400,
    });
  });
});

describe('the log', () => {
  it('never holds the user data or the credentials', async () => {
    const logs = createLogSink();
    const fx = await createAwsFixture(
      { logger: logs.logger },
      { double: { consistencyMs: 0, spotInterruption: false } },
    );
    fixtures.push(fx);
    const id = await fx.provider.create(request(fx));
    await fx.provider.get(id);
    await fx.provider.delete(id);
    const text = logs.text();
    const [credential] = [...fx.double.credentials.values()];
    expect(leakedIn(text, CLOUD_INIT)).toBeUndefined();
    expect(leakedIn(text, String(credential?.secretAccessKey))).toBeUndefined();
    expect(logs.lines.some((l) => l.msg === 'aws call' && l.fields.call === 'runInstance')).toBe(
      true,
    );
  });
});
