// Peer: the real @aws-sdk/client-ec2 (the provider's production seam) against the EC2 double on
// 127.0.0.1. Each documented EC2 error answer (test/fixtures/ec2/errors.json) goes over the wire
// and must reach the provider as the error its classify table is built from; answers the SDK
// cannot make sense of must reach it as malformed; the SDK's own retries are bounded by
// maxAttempts.
import { SecretSet, validateConfig } from '@proxy-op/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createEc2Adapter } from '../src/adapter.js';
import { classify } from '../src/classify.js';
import { configSchema } from '../src/config.js';
import { Ec2ApiError } from '../src/errors.js';
import type { Ec2Seam, RunSpec } from '../src/seam.js';
import { classifyCases, errorFixtures } from './support/cases.js';
import {
  DOUBLE_CREDENTIAL,
  type Ec2Double,
  startEc2Double,
  UBUNTU_AMI,
} from './support/ec2/double.js';
import { Ec2Fault } from './support/ec2/wire.js';

let double: Ec2Double | undefined;
let closeSeam: (() => Promise<void>) | undefined;

afterEach(async () => {
  await closeSeam?.();
  await double?.close();
  double = undefined;
});

async function seamOver(
  maxAttempts: number,
): Promise<{ seam: Ec2Seam; double: Ec2Double; secrets: SecretSet }> {
  double = await startEc2Double({ consistencyMs: 0, spotInterruption: false });
  const zone = double.zones[0] as string;
  const config = await validateConfig(configSchema, {
    region: double.region,
    vpcId: double.vpcId,
    subnets: { [zone]: double.subnetOf(zone).subnetId },
    images: { ubuntu: UBUNTU_AMI },
    endpoint: double.url,
    maxAttempts,
  });
  const secrets = new SecretSet();
  const adapter = createEc2Adapter({ config, credentials: DOUBLE_CREDENTIAL, secrets });
  closeSeam = () => adapter.close();
  return { seam: adapter.seam, double, secrets };
}

function spec(d: Ec2Double): RunSpec {
  const zone = d.zones[0] as string;
  return {
    name: 'wire',
    imageId: UBUNTU_AMI,
    instanceType: 't3.micro',
    subnetId: d.subnetOf(zone).subnetId,
    groupIds: [],
    associatePublicIp: true,
    ipv6: false,
    userData: Buffer.from('#cloud-config\n').toString('base64'),
    clientToken: 'wire-token',
    tags: { Name: 'wire' },
    spot: undefined,
  };
}

/** The seam call that sends EC2 action `action`. */
function call(seam: Ec2Seam, d: Ec2Double, action: string): Promise<unknown> {
  switch (action) {
    case 'RunInstances':
      return seam.runInstance(spec(d));
    case 'TerminateInstances':
      return seam.terminateInstances(['i-0123456789abcdef0']);
    case 'DeleteSecurityGroup':
      return seam.deleteSecurityGroup('sg-0123456789abcdef0');
    case 'AuthorizeSecurityGroupIngress':
      return seam.authorizeIngress('sg-0123456789abcdef0', [
        { protocol: 'tcp', fromPort: 3128, toPort: 3128, cidr: '203.0.113.0/24' },
      ]);
    default:
      return seam.describeInstances({ filters: [{ name: 'tag:Name', values: ['wire'] }] });
  }
}

describe('EC2 error answers through the SDK', () => {
  for (const f of errorFixtures) {
    it(`${f.name}: ${f.code} (${f.httpStatus}) reaches the provider as the classify table has it`, async () => {
      const { seam, double: d } = await seamOver(1);
      d.answerNext(new Ec2Fault(f.httpStatus, f.code, f.message));
      const err = await call(seam, d, f.action).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(Ec2ApiError.isInstance(err), String(err)).toBe(true);
      const want = classifyCases.find((c) => c.name === f.name)?.error as Ec2ApiError;
      const got = err as Ec2ApiError;
      expect({
        code: got.ec2Code,
        status: got.httpStatus,
        action: got.action,
        message: got.message,
      }).toEqual({
        code: want.ec2Code,
        status: want.httpStatus,
        action: want.action,
        message: want.message,
      });
      expect(got.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(classify(f.op, got)).toBe(f.want);
    });
  }

  it('UnauthorizedOperation: the encoded authorization message stays out of the message and of JSON', async () => {
    const { seam, double: d } = await seamOver(1);
    d.denied.add('RunInstances');
    const err = (await seam.runInstance(spec(d)).catch((e: unknown) => e)) as Ec2ApiError;
    expect(err.ec2Code).toBe('UnauthorizedOperation');
    expect(err.httpStatus).toBe(403);
    expect(err.message).toContain('ec2:RunInstances failed: UnauthorizedOperation');
    expect(err.message).toContain('is not authorized to perform: ec2:RunInstances');
    expect(err.message).toContain('(the encoded authorization message is left out)');
    expect(err.message).not.toContain('Encoded authorization failure message');
    expect(err.encodedMessage?.length).toBeGreaterThan(100);
    expect(JSON.stringify(err)).not.toContain(err.encodedMessage as string);
    expect(Object.keys(err)).not.toContain('encodedMessage');
  });

  it('a DryRun is DryRunOperation when allowed and UnauthorizedOperation when not', async () => {
    const { seam, double: d } = await seamOver(1);
    await expect(seam.dryRun({ action: 'RunInstances', spec: spec(d) })).resolves.toBeUndefined();
    await expect(seam.dryRun({ action: 'DescribeInstances' })).resolves.toBeUndefined();
    expect(d.instances.size).toBe(0);
    d.denied.add('CreateSecurityGroup');
    const err = (await seam
      .dryRun({
        action: 'CreateSecurityGroup',
        spec: { groupName: 'proxy-op-x', description: 'x', vpcId: d.vpcId, tags: {} },
      })
      .catch((e: unknown) => e)) as Ec2ApiError;
    expect([err.ec2Code, err.action]).toEqual(['UnauthorizedOperation', 'CreateSecurityGroup']);
  });

  it('throttling is retried by the SDK up to maxAttempts, and then reaches the provider', async () => {
    const { seam, double: d } = await seamOver(3);
    const limit = () => new Ec2Fault(503, 'RequestLimitExceeded', 'Request limit exceeded.');
    d.answerNext(limit());
    d.answerNext(limit());
    const from = d.requests.length;
    await expect(call(seam, d, 'DescribeInstances')).resolves.toEqual([]);
    expect(d.requests.length - from).toBe(3);
    for (let n = 0; n < 3; n++) d.answerNext(limit());
    const err = (await call(seam, d, 'DescribeInstances').catch((e: unknown) => e)) as Ec2ApiError;
    expect(err.ec2Code).toBe('RequestLimitExceeded');
    expect(classify('list', err)).toBe('Transient');
    expect(d.requests.length - from).toBe(6);
  });

  it('the credentials it signs with are declared secret', async () => {
    const { seam, secrets } = await seamOver(1);
    await seam.describeInstances({ filters: [] });
    expect(secrets.redact(`key ${DOUBLE_CREDENTIAL.secretAccessKey}`)).not.toContain(
      DOUBLE_CREDENTIAL.secretAccessKey,
    );
  });
});

describe('answers the SDK cannot make sense of', () => {
  for (const kind of ['empty', 'not-xml', 'wrong-type'] as const) {
    it(`${kind}: a DescribeInstances answer is a TypeError (the shell's malformed answer)`, async () => {
      const { seam, double: d } = await seamOver(1);
      d.plant({ name: 'wire', state: 'running' });
      d.injectMalformed(kind);
      const err = await seam
        .describeInstances({ filters: [{ name: 'tag:Name', values: ['wire'] }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      await expect(
        seam.describeInstances({ filters: [{ name: 'tag:Name', values: ['wire'] }] }),
      ).resolves.toHaveLength(1);
    });
  }

  it('a security group listing with an empty ID is a TypeError', async () => {
    const { seam, double: d } = await seamOver(1);
    d.injectMalformed('wrong-type');
    await expect(seam.describeSecurityGroups([])).rejects.toBeInstanceOf(TypeError);
  });
});
