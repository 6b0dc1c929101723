// Peer: none (pure functions): the config schema and its messages, the classify table, the
// client tokens and tags, the state mapping and addresses, the credentials file, what a seam
// call puts on its span and log line.

import { readFileSync } from 'node:fs';
import {
  ConfigError,
  createProvider,
  locationProblems,
  MarkKey,
  profileProblems,
  validateConfig,
} from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { runInput } from '../src/answers.js';
import { classify } from '../src/classify.js';
import { CONFIG_DEFAULTS, configSchema } from '../src/config.js';
import { parseCredentialsFile } from '../src/credentials.js';
import { CredentialsError, Ec2ApiError } from '../src/errors.js';
import { formatId, parseId, profile, providerModule } from '../src/index.js';
import { REGION_COUNTRY } from '../src/regions.js';
import { type InstanceView, type RunSpec, seamFields } from '../src/seam.js';
import { addressOf, launchFailure, locationOf, mapState } from '../src/state.js';
import { clientToken, generationOf, groupNameOf } from '../src/tags.js';

const BLOCK = {
  region: 'eu-central-1',
  vpcId: 'vpc-0b7e1c2d3a4f56789',
  subnets: { 'eu-central-1a': 'subnet-01a2b3c4d5e6f7081' },
  images: { 'ubuntu-2404': 'ami-0e872aee57663ae2d' },
};

async function problems(block: unknown): Promise<string[]> {
  try {
    await createProvider(providerModule, 'aws-1', block, {});
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

describe('the config block', () => {
  it('fills every default from CONFIG_DEFAULTS', async () => {
    const c = await validateConfig(configSchema, BLOCK);
    expect(c).toEqual({
      ...BLOCK,
      instanceTypes: CONFIG_DEFAULTS.instanceTypes,
      addressMode: 'public',
      ipv6: false,
      market: 'on-demand',
      spotMaxPrice: undefined,
      securityGroup: CONFIG_DEFAULTS.securityGroup,
      endpoint: undefined,
      credentialsFile: undefined,
      credentialsProfile: 'default',
      maxAttempts: 3,
      timeouts: { readMs: 30_000, writeMs: 60_000 },
      consistency: { windowMs: 120_000, waitMs: 5_000 },
    });
    expect(Object.isFrozen(CONFIG_DEFAULTS)).toBe(true);
  });

  it('names every faulty field at once', async () => {
    expect(
      await problems({
        region: 'Frankfurt',
        subnets: { 'eu-west-1a': 'subnet-1', 'eu-central-1b': 'subnet-0123' },
        images: {},
        instanceTypes: ['t3.micro', 't3.micro'],
        market: 'auction',
        spotMaxPrice: 'cheap',
        securityGroup: { sourceRanges: ['10.0.0.0/33'], extraGroupIds: ['default'], ssh: true },
        endpoint: 'https://ec2.example/path',
        maxAttempts: 0,
        timeouts: { readMs: -1, totalMs: 5 },
        zone: 'x',
      }),
    ).toEqual([
      'aws.zone: unknown field; expected one of region, vpcId, subnets, images, instanceTypes, addressMode, ipv6, market, spotMaxPrice, securityGroup, endpoint, credentialsFile, credentialsProfile, maxAttempts, timeouts, consistency',
      'aws.region: "Frankfurt" is not a region name (eu-central-1)',
      'aws.vpcId: is required',
      'aws.subnets.eu-west-1a: "subnet-1" is not a subnet ID (subnet-...)',
      'aws.subnets.eu-central-1b: "subnet-0123" is not a subnet ID (subnet-...)',
      'aws.images: must map at least one key to an AMI ID (ami-...)',
      'aws.instanceTypes[1]: "t3.micro" is listed twice',
      'aws.market: must be one of "on-demand", "spot"',
      'aws.spotMaxPrice: "cheap" is not a price in USD per hour ("0.0125")',
      'aws.securityGroup.ssh: unknown field; expected sourceRanges, extraGroupIds',
      'aws.securityGroup.sourceRanges[0]: "10.0.0.0/33" has a prefix length that is not 0 to 32',
      'aws.securityGroup.extraGroupIds[0]: "default" is not a security group ID (sg-...)',
      'aws.endpoint: "https://ec2.example/path" must have no path, query or fragment',
      'aws.maxAttempts: must be a whole number from 1 to 10',
      'aws.timeouts.totalMs: unknown field; expected readMs, writeMs',
      'aws.timeouts.readMs: must be a whole number of milliseconds above zero',
    ]);
  });

  it('refuses a zone of another region, and a Spot price for On-Demand instances', async () => {
    expect(
      await problems({
        ...BLOCK,
        subnets: { 'eu-west-1a': 'subnet-01a2b3c4d5e6f7081' },
        spotMaxPrice: '0.01',
      }),
    ).toEqual([
      'aws.subnets.eu-west-1a: "eu-west-1a" is not a zone of region eu-central-1',
      'aws.spotMaxPrice: applies to Spot Instances only; set market to "spot" or leave it out',
    ]);
  });
});

describe('the README’s config table', () => {
  it('gives every default as CONFIG_DEFAULTS has it', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const rows = readme
      .slice(readme.indexOf('## Config reference'))
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split('|').map((c) => c.trim()));
    const cell = (v: unknown): string =>
      Array.isArray(v)
        ? v.length === 0
          ? 'none'
          : v.map((x) => `\`${x}\``).join(', ')
        : typeof v === 'number'
          ? String(v)
          : `\`${String(v)}\``;
    let checked = 0;
    for (const [, field = '', , dflt = ''] of rows) {
      const path = field.replace(/`/g, '').split('.');
      let v: unknown = CONFIG_DEFAULTS;
      for (const p of path) v = (v as Record<string, unknown> | undefined)?.[p];
      if (v === undefined) continue;
      expect(dflt, field).toBe(cell(v));
      checked++;
    }
    expect(checked).toBe(12);
  });
});

describe('IDs, names and client tokens', () => {
  it('IDs are regions/<region>/instances/<name>, parsed strictly', () => {
    expect(formatId({ region: 'eu-central-1', name: 'proxy-web-1' })).toBe(
      'regions/eu-central-1/instances/proxy-web-1',
    );
    expect(parseId('regions/eu-central-1/instances/proxy-web-1')).toEqual({
      region: 'eu-central-1',
      name: 'proxy-web-1',
    });
    for (const bad of [
      'regions/eu-central-1/instances/Proxy',
      'regions/EU/instances/p',
      'instances/p',
      'regions/eu-central-1/instances/i-0123/x',
    ]) {
      expect(parseId(bad), bad).toBeUndefined();
    }
  });

  it('a client token per UID, name and launch, at most 64 ASCII characters, read back', () => {
    const t = clientToken('6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11', 'proxy-web-1', 12);
    expect(t).toMatch(/^po1-[0-9a-f]{40}-12$/);
    expect(t.length).toBeLessThanOrEqual(64);
    expect(clientToken('a', 'b', 0)).not.toBe(clientToken('a', 'c', 0));
    expect(clientToken('a', 'b', 0)).not.toBe(clientToken('b', 'b', 0));
    expect(generationOf(t, '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11', 'proxy-web-1')).toBe(12);
    expect(generationOf(t, 'other', 'proxy-web-1')).toBeUndefined();
    expect(generationOf('a-token-of-the-console', 'a', 'b')).toBeUndefined();
    expect(groupNameOf('proxy-web-1')).toBe('proxy-op-proxy-web-1');
  });
});

const view = (o: Partial<InstanceView>): InstanceView => ({
  instanceId: 'i-0123456789abcdef0',
  state: 'running',
  stateReason: undefined,
  stateReasonMessage: undefined,
  tags: {},
  zone: 'eu-central-1a',
  launchTime: new Date(),
  clientToken: '',
  publicIp: undefined,
  privateIp: '10.0.0.9',
  ipv6: undefined,
  spot: false,
  ...o,
});

describe('states, addresses and locations', () => {
  it('maps every EC2 state', () => {
    expect(mapState(view({ state: 'pending' }), undefined)).toBe('Provisioning');
    expect(mapState(view({ state: 'running' }), '203.0.113.1')).toBe('Running');
    expect(mapState(view({ state: 'running' }), undefined)).toBe('Provisioning');
    expect(mapState(view({ state: 'stopping' }), undefined)).toBe('Stopped');
    expect(mapState(view({ state: 'stopped' }), undefined)).toBe('Stopped');
    expect(
      mapState(
        view({ state: 'shutting-down', stateReason: 'Client.UserInitiatedShutdown' }),
        undefined,
      ),
    ).toBe('Terminated');
    expect(
      mapState(
        view({ state: 'terminated', stateReason: 'Server.SpotInstanceTermination', spot: true }),
        undefined,
      ),
    ).toBe('Preempted');
    expect(
      mapState(
        view({
          state: 'terminated',
          stateReason: 'Server.SpotInstanceTermination',
          tags: { 'proxy-operator-deleted': 'x' },
        }),
        undefined,
      ),
    ).toBe('Preempted');
    expect(mapState(view({ state: 'hibernated' }), '203.0.113.1')).toBe('Stopped');
  });

  it('a launch EC2 gave up is its failure, with the class', () => {
    expect(
      launchFailure(
        view({
          state: 'terminated',
          stateReason: 'Server.InsufficientInstanceCapacity',
          stateReasonMessage: 'Server.InsufficientInstanceCapacity: Insufficient capacity.',
        }),
      ),
    ).toEqual({
      errorClass: 'QuotaExceeded',
      message:
        'EC2 accepted the launch of instance i-0123456789abcdef0 and then ended it: Server.InsufficientInstanceCapacity: Insufficient capacity.',
    });
    expect(
      launchFailure(view({ state: 'terminated', stateReason: 'Client.InvalidSnapshot.NotFound' }))
        ?.errorClass,
    ).toBe('Permanent');
    expect(
      launchFailure(view({ state: 'terminated', stateReason: 'Client.UserInitiatedShutdown' })),
    ).toBeUndefined();
  });

  it('the address: public IPv4, else IPv6; or private', () => {
    expect(addressOf(view({ publicIp: '203.0.113.1', ipv6: '2001:db8::1' }), 'public')).toBe(
      '203.0.113.1',
    );
    expect(addressOf(view({ ipv6: '2001:db8::1' }), 'public')).toBe('2001:db8::1');
    expect(addressOf(view({}), 'public')).toBeUndefined();
    expect(addressOf(view({ publicIp: '203.0.113.1' }), 'private')).toBe('10.0.0.9');
  });

  it('every region of the table makes a well-formed location', () => {
    for (const [region, country] of Object.entries(REGION_COUNTRY)) {
      expect(locationProblems(locationOf(region, `${region}a`), region)).toEqual([]);
      expect(country).toMatch(/^[A-Z]{2}$/);
    }
    expect(locationOf('xx-new-1', 'xx-new-1a')).toEqual({ region: 'xx-new-1', zone: 'xx-new-1a' });
  });
});

describe('the profile and classify', () => {
  it('the profile passes the contract’s checks and is frozen', () => {
    expect(profileProblems(profile)).toEqual([]);
    expect(Object.isFrozen(profile)).toBe(true);
    expect(providerModule.type).toBe('aws');
  });

  it('classifies what it does not know as Transient, credentials by kind', () => {
    expect(classify('get', new Error('?'))).toBe('Transient');
    expect(
      classify(
        'get',
        new Ec2ApiError({
          action: 'DescribeInstances',
          ec2Code: 'SomethingNew',
          message: 'x',
          httpStatus: 400,
        }),
      ),
    ).toBe('Transient');
    expect(classify('create', new CredentialsError('missing', 'x'))).toBe('Transient');
    expect(classify('create', new CredentialsError('invalid', 'x'))).toBe('Permanent');
  });
});

describe('the credentials file', () => {
  it('reads one profile, with a session token where there is one', () => {
    const text =
      '# a comment\n[default]\naws_access_key_id = AKIDONE\naws_secret_access_key=secret/one\n\n[proxy-op]\naws_access_key_id=AKIDTWO\naws_secret_access_key = secret/two\naws_session_token = token-two\n';
    expect(parseCredentialsFile(text, 'default')).toEqual({
      accessKeyId: 'AKIDONE',
      secretAccessKey: 'secret/one',
    });
    expect(parseCredentialsFile(text, 'proxy-op')).toEqual({
      accessKeyId: 'AKIDTWO',
      secretAccessKey: 'secret/two',
      sessionToken: 'token-two',
    });
    expect(() => parseCredentialsFile(text, 'other')).toThrow(CredentialsError);
  });
});

describe('what a call puts on its span and log line', () => {
  it('identifiers only: never the user data or a tag but the name', () => {
    const spec: RunSpec = {
      name: 'proxy-web-1',
      imageId: 'ami-0e872aee57663ae2d',
      instanceType: 't3.micro',
      subnetId: 'subnet-01a2b3c4d5e6f7081',
      groupIds: ['sg-0123456789abcdef0'],
      associatePublicIp: true,
      ipv6: false,
      userData: Buffer.from('#cloud-config SECRET').toString('base64'),
      clientToken: 'po1-x-0',
      tags: { Name: 'proxy-web-1', [MarkKey.Uid]: 'u' },
      spot: undefined,
    };
    expect(seamFields('runInstance', [spec])).toEqual({
      name: 'proxy-web-1',
      clientToken: 'po1-x-0',
    });
    expect(
      seamFields('describeInstances', [
        { filters: [{ name: 'tag:Name', values: ['proxy-web-1'] }] },
      ]),
    ).toEqual({ name: 'proxy-web-1' });
    expect(seamFields('terminateInstances', [['i-1', 'i-2']])).toEqual({ resourceIds: 'i-1,i-2' });
    expect(seamFields('dryRun', [{ action: 'RunInstances', spec }])).toEqual({
      action: 'RunInstances',
    });
  });

  it('RunInstances asks for IMDSv2 only, out of the proxy’s reach (one hop)', () => {
    const input = runInput(
      {
        name: 'p',
        imageId: 'ami-0e872aee57663ae2d',
        instanceType: 't3.micro',
        subnetId: 'subnet-01a2b3c4d5e6f7081',
        groupIds: [],
        associatePublicIp: false,
        ipv6: false,
        userData: '',
        clientToken: 't',
        tags: {},
        spot: {},
      },
      false,
    );
    expect(input.MetadataOptions).toEqual({
      HttpTokens: 'required',
      HttpPutResponseHopLimit: 1,
      HttpEndpoint: 'enabled',
    });
    expect(input.InstanceMarketOptions).toEqual({
      MarketType: 'spot',
      SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' },
    });
    expect(input.TagSpecifications.map((s) => s.ResourceType)).toEqual([
      'instance',
      'volume',
      'network-interface',
      'spot-instances-request',
    ]);
  });
});
