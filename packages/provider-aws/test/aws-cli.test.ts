// Peer: the real aws CLI v2 (Debian's awscli, /usr/bin/aws) against the EC2 double through
// --endpoint-url, side by side with the provider over the real @aws-sdk/client-ec2. The double
// must answer the CLI's own requests (its signature, its client token, its paginator, its
// waiter's polling through eventual consistency, DryRun) the way EC2 does, and both clients
// must read what the other made.
import { isNotFound, type Provider } from '@proxy-op/contract';
import * as vitest from 'vitest';
import { type AwsCli, awsCli, describeWithAwsCli } from './support/aws-cli.js';
import type { Ec2Double } from './support/ec2/double.js';
import { UBUNTU_AMI } from './support/ec2/double.js';
import { type AwsFixture, createAwsFixture } from './support/fixture.js';

const { afterAll, beforeAll, expect } = vitest;
/** The CLI takes a second or more per command, more on a busy machine. */
const it = (name: string, fn: () => Promise<void>) => vitest.it(name, fn, 180_000);

type Json = Record<string, unknown>;
const instancesOf = (out: unknown): Json[] =>
  ((out as { Reservations?: { Instances: Json[] }[] }).Reservations ?? []).flatMap(
    (r) => r.Instances,
  );
const tagsOf = (i: Json): Record<string, string> =>
  Object.fromEntries(
    ((i.Tags as { Key: string; Value: string }[]) ?? []).map((t) => [t.Key, t.Value]),
  );

describeWithAwsCli(vitest, 'the aws CLI against the EC2 double', (path) => {
  let fx: AwsFixture;
  let double: Ec2Double;
  let provider: Provider;
  let aws: AwsCli;
  let subnet = '';
  const zone = 'eu-central-1a';

  beforeAll(async () => {
    // EC2's eventual consistency stays on (the CLI's waiter has to cope with it), shutting-down
    // lasts a minute (each CLI command takes a second or more to start), and Spot interruptions
    // come when the test asks for them.
    fx = await createAwsFixture(
      {},
      { double: { consistencyMs: 1500, terminateMs: 60_000, spotInterruption: false } },
    );
    double = fx.double;
    provider = fx.provider;
    const [credential] = [...double.credentials.values()];
    aws = awsCli(path, double.url, double.region, credential as never);
    subnet = double.subnetOf(zone).subnetId;
  });

  afterAll(async () => {
    aws?.close();
    await fx?.cleanup?.();
  });

  it('run-instances: tags, IMDSv2 options, Spot options, user data and its client token reach the double', async () => {
    const r = await aws.run([
      'ec2',
      'run-instances',
      '--image-id',
      UBUNTU_AMI,
      '--instance-type',
      't3.micro',
      '--count',
      '1',
      '--network-interfaces',
      `DeviceIndex=0,SubnetId=${subnet},AssociatePublicIpAddress=true,DeleteOnTermination=true`,
      '--tag-specifications',
      'ResourceType=instance,Tags=[{Key=Name,Value=cli-web},{Key=proxy-operator-managed,Value=true},{Key=proxy-operator-uid,Value=uid-from-cli},{Key=proxy-operator-created-at,Value=2026-01-02T03:04:05Z}]',
      '--metadata-options',
      'HttpTokens=required,HttpPutResponseHopLimit=1,HttpEndpoint=enabled',
      '--instance-market-options',
      'MarketType=spot,SpotOptions={SpotInstanceType=one-time,InstanceInterruptionBehavior=terminate}',
      '--user-data',
      '#cloud-config\nruncmd: [echo made by the CLI]\n',
      '--client-token',
      'cli-token-1',
    ]);
    const [inst] = (r.json as { Instances: Json[] }).Instances;
    expect(inst?.State).toEqual({ Code: 0, Name: 'pending' });
    expect(inst?.InstanceLifecycle).toBe('spot');
    expect(inst?.ClientToken).toBe('cli-token-1');
    expect(inst?.MetadataOptions).toMatchObject({
      HttpTokens: 'required',
      HttpPutResponseHopLimit: 1,
    });
    const req = double.requests.filter((x) => x.action === 'RunInstances').at(-1);
    // The CLI sends the user data base64-encoded, as the SDK does.
    expect(Buffer.from(String(req?.params.UserData), 'base64').toString()).toContain(
      'made by the CLI',
    );
    // The same client token again: the same instance, nothing new.
    const again = await aws.run([
      'ec2',
      'run-instances',
      '--image-id',
      UBUNTU_AMI,
      '--instance-type',
      't3.micro',
      '--count',
      '1',
      '--network-interfaces',
      `DeviceIndex=0,SubnetId=${subnet},AssociatePublicIpAddress=true,DeleteOnTermination=true`,
      '--tag-specifications',
      'ResourceType=instance,Tags=[{Key=Name,Value=cli-web},{Key=proxy-operator-managed,Value=true},{Key=proxy-operator-uid,Value=uid-from-cli},{Key=proxy-operator-created-at,Value=2026-01-02T03:04:05Z}]',
      '--metadata-options',
      'HttpTokens=required,HttpPutResponseHopLimit=1,HttpEndpoint=enabled',
      '--instance-market-options',
      'MarketType=spot,SpotOptions={SpotInstanceType=one-time,InstanceInterruptionBehavior=terminate}',
      '--user-data',
      '#cloud-config\nruncmd: [echo made by the CLI]\n',
      '--client-token',
      'cli-token-1',
    ]);
    expect((again.json as { Instances: Json[] }).Instances[0]?.InstanceId).toBe(inst?.InstanceId);
    // Other arguments with it: EC2's IdempotentParameterMismatch, as the CLI prints it.
    const other = await aws.run(
      [
        'ec2',
        'run-instances',
        '--image-id',
        UBUNTU_AMI,
        '--instance-type',
        't3.small',
        '--count',
        '1',
        '--subnet-id',
        subnet,
        '--client-token',
        'cli-token-1',
      ],
      { allowFailure: true },
    );
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain(
      '(IdempotentParameterMismatch) when calling the RunInstances operation',
    );
  });

  it('describe-instances right after a launch: InvalidInstanceID.NotFound, and the CLI’s waiter polls through it', async () => {
    // The window lasts until the test ends it, however long the CLI takes to start: the first
    // describe meets it for sure, and the waiter polls through it until the instance shows.
    const window = double.consistencyMs;
    double.consistencyMs = Number.POSITIVE_INFINITY;
    const r = await aws.run([
      'ec2',
      'run-instances',
      '--image-id',
      UBUNTU_AMI,
      '--instance-type',
      't3.micro',
      '--subnet-id',
      subnet,
      '--tag-specifications',
      'ResourceType=instance,Tags=[{Key=Name,Value=cli-fresh}]',
    ]);
    double.consistencyMs = window;
    const id = String((r.json as { Instances: Json[] }).Instances[0]?.InstanceId);
    const early = await aws.run(['ec2', 'describe-instances', '--instance-ids', id], {
      allowFailure: true,
    });
    expect(early.stderr).toContain(
      `(InvalidInstanceID.NotFound) when calling the DescribeInstances operation: The instance ID '${id}' does not exist`,
    );
    const from = double.requests.length;
    const waiting = aws.run(['ec2', 'wait', 'instance-exists', '--instance-ids', id]);
    // Once the waiter has asked and been told NotFound, the instance shows.
    await vitest.vi.waitFor(() => expect(double.requests.length).toBeGreaterThan(from), {
      timeout: 60_000,
      interval: 100,
    });
    const fresh = double.instances.get(id);
    if (fresh === undefined) throw new Error(`the double has no ${id}`);
    double.reveal(fresh);
    const waited = await waiting;
    expect(waited.code).toBe(0);
    expect(double.requests.slice(from).length).toBeGreaterThan(1);
  });

  it('the provider reads what the CLI made: Get, ListByTag, Spot interruption as Preempted', async () => {
    double.settle();
    const id = `regions/${double.region}/instances/cli-web`;
    await vitest.vi.waitFor(async () => expect((await provider.get(id)).state).toBe('Running'), {
      timeout: 10_000,
    });
    const got = await provider.get(id);
    expect(got).toMatchObject({
      uid: 'uid-from-cli',
      location: { region: 'eu-central-1', zone, country: 'DE' },
    });
    expect(got.createdAt.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
    double.interrupt(double.named('cli-web')[0] as never);
    const shown = await aws.run([
      'ec2',
      'describe-instances',
      '--filters',
      'Name=tag:Name,Values=cli-web',
    ]);
    const [inst] = instancesOf(shown.json);
    expect(inst?.State).toEqual({ Code: 32, Name: 'shutting-down' });
    expect(inst?.StateReason).toEqual({
      Code: 'Server.SpotInstanceTermination',
      Message: 'Server.SpotInstanceTermination: Spot instance termination',
    });
    expect(inst?.StateTransitionReason).toMatch(
      /^Service initiated \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\)$/,
    );
    expect((await provider.get(id)).state).toBe('Preempted');
  });

  it('the CLI reads what the provider made: the instance, its tags and IMDSv2 options, its security group', async () => {
    const id = await provider.create({
      name: 'from-provider',
      namespace: 'default',
      uid: 'uid-from-provider',
      port: 3128,
      cloudInit: new TextEncoder().encode('#cloud-config\n'),
      allowedSources: ['203.0.113.0/24', '2001:db8:100::/48'],
      placement: { zone, machineType: 't3.micro', image: 'ubuntu-2404' },
    });
    expect(id).toBe('regions/eu-central-1/instances/from-provider');
    const waited = await aws.run([
      'ec2',
      'describe-instances',
      '--filters',
      'Name=tag:Name,Values=from-provider',
      'Name=tag:proxy-operator-managed,Values=true',
    ]);
    let [inst] = instancesOf(waited.json);
    if (inst === undefined) {
      await new Promise((r) => setTimeout(r, 1600));
      [inst] = instancesOf(
        (
          await aws.run([
            'ec2',
            'describe-instances',
            '--filters',
            'Name=tag:Name,Values=from-provider',
          ])
        ).json,
      );
    }
    expect(tagsOf(inst as Json)).toMatchObject({
      Name: 'from-provider',
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': 'uid-from-provider',
      'proxy-operator-installation': 'default',
    });
    expect(inst?.MetadataOptions).toMatchObject({
      HttpTokens: 'required',
      HttpPutResponseHopLimit: 1,
      HttpEndpoint: 'enabled',
    });
    expect(String(inst?.ClientToken)).toMatch(/^po1-[0-9a-f]{40}-0$/);
    const groups = await aws.run([
      'ec2',
      'describe-security-groups',
      '--filters',
      'Name=group-name,Values=proxy-op-from-provider',
      `Name=vpc-id,Values=${double.vpcId}`,
    ]);
    const [sg] = (groups.json as { SecurityGroups: Json[] }).SecurityGroups;
    expect(sg?.IpPermissions).toEqual([
      {
        IpProtocol: 'tcp',
        FromPort: 3128,
        ToPort: 3128,
        UserIdGroupPairs: [],
        IpRanges: [{ CidrIp: '203.0.113.0/24' }],
        Ipv6Ranges: [{ CidrIpv6: '2001:db8:100::/48' }],
        PrefixListIds: [],
      },
    ]);
    expect(tagsOf(sg as Json)['proxy-operator-uid']).toBe('uid-from-provider');
    expect(((inst?.SecurityGroups ?? []) as Json[]).map((g) => g.GroupId)).toEqual([sg?.GroupId]);
  });

  it('describe-instances pages with NextToken, as the CLI paginates', async () => {
    for (let n = 0; n < 6; n++)
      double.plant({
        name: `page-${n}`,
        state: 'running',
        tags: { 'proxy-operator-managed': 'true' },
      });
    const first = await aws.run([
      'ec2',
      'describe-instances',
      '--filters',
      'Name=tag:Name,Values=page-*',
      '--max-results',
      '5',
      '--no-paginate',
    ]);
    const out = first.json as { Reservations: unknown[]; NextToken?: string };
    expect(instancesOf(out)).toHaveLength(5);
    expect(out.NextToken).toEqual(expect.any(String));
    const all = await aws.run([
      'ec2',
      'describe-instances',
      '--filters',
      'Name=tag:Name,Values=page-*',
      'Name=instance-state-name,Values=running',
      '--page-size',
      '5',
    ]);
    expect(
      instancesOf(all.json)
        .map((i) => tagsOf(i).Name)
        .sort(),
    ).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4', 'page-5']);
    const refused = await aws.run(
      ['ec2', 'describe-instances', '--max-results', '3', '--no-paginate'],
      { allowFailure: true },
    );
    expect(refused.stderr).toContain('(InvalidParameterValue)');
  });

  it('create-tags and terminate-instances, read back by the provider', async () => {
    const [planted] = [
      double.plant({ name: 'tag-me', state: 'running', publicIp: '198.51.100.20' }),
    ];
    const id = `regions/${double.region}/instances/tag-me`;
    expect(await provider.get(id).catch(isNotFound)).toBe(true);
    await aws.run([
      'ec2',
      'create-tags',
      '--resources',
      String(planted?.instanceId),
      '--tags',
      'Key=proxy-operator-managed,Value=true',
      'Key=proxy-operator-uid,Value=uid-tagged',
    ]);
    expect(await provider.get(id)).toMatchObject({
      uid: 'uid-tagged',
      state: 'Running',
      ip: '198.51.100.20',
    });
    const t = await aws.run([
      'ec2',
      'terminate-instances',
      '--instance-ids',
      String(planted?.instanceId),
    ]);
    expect((t.json as { TerminatingInstances: Json[] }).TerminatingInstances[0]).toMatchObject({
      CurrentState: { Code: 32, Name: 'shutting-down' },
      PreviousState: { Code: 16, Name: 'running' },
    });
    expect((await provider.get(id)).state).toBe('Terminated');
  });

  it('describe-images and describe-subnets: the catalogue, and EC2’s errors for what is not there', async () => {
    const images = await aws.run(['ec2', 'describe-images', '--image-ids', UBUNTU_AMI]);
    expect((images.json as { Images: Json[] }).Images[0]).toMatchObject({
      ImageId: UBUNTU_AMI,
      State: 'available',
      RootDeviceName: '/dev/sda1',
    });
    const missing = await aws.run(
      ['ec2', 'describe-images', '--image-ids', 'ami-0123456789abcdef0'],
      { allowFailure: true },
    );
    expect(missing.stderr).toContain(
      "(InvalidAMIID.NotFound) when calling the DescribeImages operation: The image id '[ami-0123456789abcdef0]' does not exist",
    );
    const subnets = await aws.run(['ec2', 'describe-subnets', '--subnet-ids', subnet]);
    expect((subnets.json as { Subnets: Json[] }).Subnets[0]).toMatchObject({
      SubnetId: subnet,
      AvailabilityZone: zone,
      VpcId: double.vpcId,
    });
    const gone = await aws.run(
      ['ec2', 'describe-subnets', '--subnet-ids', 'subnet-0123456789abcdef0'],
      { allowFailure: true },
    );
    expect(gone.stderr).toContain(
      "(InvalidSubnetID.NotFound) when calling the DescribeSubnets operation: The subnet ID 'subnet-0123456789abcdef0' does not exist",
    );
  });

  it('dry runs: DryRunOperation when allowed, UnauthorizedOperation when not', async () => {
    const allowed = await aws.run(
      [
        'ec2',
        'run-instances',
        '--dry-run',
        '--image-id',
        UBUNTU_AMI,
        '--instance-type',
        't3.micro',
        '--subnet-id',
        subnet,
      ],
      { allowFailure: true },
    );
    expect(allowed.stderr).toContain(
      '(DryRunOperation) when calling the RunInstances operation: Request would have succeeded, but DryRun flag is set.',
    );
    double.denied.add('TerminateInstances');
    try {
      const refused = await aws.run(
        ['ec2', 'terminate-instances', '--dry-run', '--instance-ids', 'i-0123456789abcdef0'],
        { allowFailure: true },
      );
      expect(refused.stderr).toContain(
        '(UnauthorizedOperation) when calling the TerminateInstances operation: You are not authorized to perform this operation.',
      );
      expect(refused.stderr).toContain('Encoded authorization failure message:');
    } finally {
      double.denied.delete('TerminateInstances');
    }
  });

  it('a signature made with another secret is AuthFailure', async () => {
    const [credential] = [...double.credentials.values()];
    const wrong = awsCli(path, double.url, double.region, {
      accessKeyId: String(credential?.accessKeyId),
      secretAccessKey: 'not-the-secret',
    });
    try {
      const r = await wrong.run(['ec2', 'describe-instances'], { allowFailure: true });
      expect(r.stderr).toContain(
        '(AuthFailure) when calling the DescribeInstances operation: AWS was not able to validate the provided access credentials',
      );
    } finally {
      wrong.close();
    }
  });
});
