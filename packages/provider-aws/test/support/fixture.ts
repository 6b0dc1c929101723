// Test support (not a test file): the conformance harness of the `aws` provider. The provider
// runs as users build it (createProvider, the real @aws-sdk/client-ec2, credentials from a
// mounted file read on every request) against the EC2 double on 127.0.0.1; the harness acts on
// the double behind the provider's back.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider, MarkKey, type Provider } from '@proxy-op/contract';
import {
  type BackendHarness,
  type ConformanceDeps,
  type ConformanceFixture,
  type PlantedMark,
  plantedMarkPairs,
} from '@proxy-op/providertest';
import { classify } from '../../src/classify.js';
import { parseId, providerModule } from '../../src/index.js';
import { classifyCases } from './cases.js';
import {
  DEBIAN_AMI,
  type Ec2Double,
  type Ec2DoubleOptions,
  startEc2Double,
  UBUNTU_AMI,
} from './ec2/double.js';
import type { DoubleInstance } from './ec2/model.js';
import type { DoubleCredential } from './ec2/sigv4.js';

/** The credential sentinel: the session token a refused credential carries, and the double echoes. */
export const AWS_CREDENTIAL_SENTINEL = 'IQoJb3JpZ2luX2VjEJr-SENTINEL-4b8e2d-never-log-me';

/** The per-call budget the conformance provider is built with. */
export const CALL_BUDGET_MS = 3000;

/** A shared credentials file holding one profile. */
export function credentialsFileText(c: DoubleCredential, profile = 'default'): string {
  return [
    `[${profile}]`,
    `aws_access_key_id = ${c.accessKeyId}`,
    `aws_secret_access_key = ${c.secretAccessKey}`,
    ...(c.sessionToken === undefined ? [] : [`aws_session_token = ${c.sessionToken}`]),
    '',
  ].join('\n');
}

/** Options of {@link createAwsFixture}. */
export interface AwsFixtureOptions {
  readonly double?: Ec2DoubleOptions;
  /** Config fields over the fixture's. */
  readonly config?: Record<string, unknown>;
  /** The provider's name (default `aws-test`). */
  readonly name?: string;
}

/** The fixture plus the double it runs against. */
export interface AwsFixture extends ConformanceFixture {
  readonly double: Ec2Double;
  readonly config: Record<string, unknown>;
  /** The credentials file the provider reads. */
  readonly credentialsFile: string;
  /** The instance of an ID: the newest live one of its name, else the newest one. */
  instanceOf(id: string): DoubleInstance;
}

let keys = 0;

/** Builds a provider over a fresh double, with the conformance harness. */
export async function createAwsFixture(
  deps: Partial<ConformanceDeps>,
  o: AwsFixtureOptions = {},
): Promise<AwsFixture> {
  const credential: DoubleCredential = {
    accessKeyId: `AKIAFIXTURE${String(++keys).padStart(9, '0')}`,
    secretAccessKey: `fixture/secret/${keys}/wJalrXUtnFEMIK7MDENGbPxRfiCY`,
  };
  const double = await startEc2Double({ credentials: [credential], ...o.double });
  const dir = await mkdtemp(join(tmpdir(), 'aws-fixture-'));
  const credentialsFile = join(dir, 'credentials');
  await writeFile(credentialsFile, credentialsFileText(credential), { mode: 0o600 });
  const [zoneA, zoneB] = double.zones as [string, string];
  const config: Record<string, unknown> = {
    region: double.region,
    vpcId: double.vpcId,
    subnets: { [zoneA]: double.subnetOf(zoneA).subnetId, [zoneB]: double.subnetOf(zoneB).subnetId },
    images: { 'ubuntu-2404': UBUNTU_AMI, 'debian-12': DEBIAN_AMI },
    endpoint: double.url,
    credentialsFile,
    maxAttempts: 2,
    timeouts: { readMs: CALL_BUDGET_MS, writeMs: CALL_BUDGET_MS },
    consistency: { windowMs: 60_000, waitMs: 3_000 },
    ...o.config,
  };
  const provider: Provider = await createProvider(
    providerModule,
    o.name ?? 'aws-test',
    config,
    deps,
  );
  const instanceOf = (id: string): DoubleInstance => {
    const parts = parseId(id);
    if (parts === undefined) throw new Error(`harness: not an aws provider ID: ${id}`);
    const all = double.named(parts.name);
    const inst = all.find((i) => i.state !== 'terminated') ?? all[0];
    if (inst === undefined) throw new Error(`harness: no instance for ${id}`);
    double.reveal(inst);
    return inst;
  };
  const plant = (name: string, tags: Record<string, string>) => {
    double.plant({ name, state: 'running', tags, publicIp: '198.51.100.7' });
    return `regions/${double.region}/instances/${name}`;
  };
  const markTagsOf = (mark: PlantedMark) => plantedMarkPairs(mark);
  let malformed = 0;
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      allowedSources: ['203.0.113.0/24', '2001:db8:100::/48'],
      placement: { zone: zoneA, machineType: 't3.micro', image: 'ubuntu-2404' },
    },
    invalidPlacements: [
      {
        placement: { zone: zoneA, machineType: 'm9.huge', image: 'ubuntu-2404' },
        field: 'placement.machineType',
      },
      { placement: { zone: zoneA, image: 'ubuntu-2404' }, field: 'placement.machineType' },
      {
        placement: { zone: zoneA, machineType: 't3.micro', image: 'windows-2022' },
        field: 'placement.image',
      },
      { placement: { zone: zoneA, machineType: 't3.micro' }, field: 'placement.image' },
      {
        placement: { zone: 'us-east-1a', machineType: 't3.micro', image: 'ubuntu-2404' },
        field: 'placement.zone',
      },
      { placement: { machineType: 't3.micro', image: 'ubuntu-2404' }, field: 'placement.zone' },
      {
        placement: {
          region: 'us-east-1',
          zone: zoneA,
          machineType: 't3.micro',
          image: 'ubuntu-2404',
        },
        field: 'placement.region',
      },
    ],
    backendCalls: () => double.requests.length,
    instanceCount: async () => double.liveInstances().length,
    secondaryCount: async () => double.groups.size,
    setRunning: async (id, ip) => {
      const inst = instanceOf(id);
      inst.state = 'running';
      inst.publicIp = ip;
    },
    setState: async (id, state) => {
      const inst = instanceOf(id);
      if (state === 'running') inst.state = 'running';
      else if (state === 'stopped') {
        inst.state = 'stopped';
        inst.publicIp = undefined;
      } else inst.state = 'hibernated';
    },
    preempt: async (id) => {
      double.interrupt(instanceOf(id));
    },
    rewriteMark: async (id, mark) => {
      const inst = instanceOf(id);
      inst.tags.set(MarkKey.Uid, mark.uid);
      inst.tags.set(MarkKey.CreatedAt, mark.createdAt.toISOString().replace(/\.\d{3}Z$/, 'Z'));
    },
    replaceInstance: async (id, mark) => {
      // Someone terminated the instance and launched another of the same name.
      const inst = instanceOf(id);
      double.terminateByUser(inst);
      double.settle();
      const name = parseId(id)?.name as string;
      double.plant({
        name,
        state: 'running',
        tags: mark === undefined ? {} : markTagsOf(mark),
        publicIp: '198.51.100.9',
      });
    },
    holdNextDelete: (id) => double.holdNextTerminate(instanceOf(id).instanceId),
    plantNeverStarted: async (req) => {
      const zone = req.placement.zone ?? zoneA;
      double.plant({
        name: req.name,
        zone,
        state: 'pending',
        tags: {
          [MarkKey.Managed]: 'true',
          [MarkKey.Uid]: req.uid,
          [MarkKey.CreatedAt]: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          [MarkKey.Installation]: req.installation ?? 'default',
        },
      });
      return `regions/${double.region}/instances/${req.name}`;
    },
    plantUnmarked: async (name) => plant(name, {}),
    plantMarked: async (name, mark) => plant(name, markTagsOf(mark)),
    blockCalls: (skip) => double.blockCalls(skip),
    injectMalformed: () => {
      const kinds = ['empty', 'not-xml', 'wrong-type'] as const;
      double.injectMalformed(kinds[malformed++ % kinds.length]);
    },
    exhaustCapacity: () => {
      double.insufficientCapacity = true;
    },
    failNextCreateLater: () => {
      double.failNextLaunch = {
        reason: {
          code: 'Server.InsufficientInstanceCapacity',
          message: 'Server.InsufficientInstanceCapacity: Insufficient capacity.',
        },
        times: 1,
      };
    },
    callBudgetMs: CALL_BUDGET_MS,
    classifyCases,
    classify,
    checkTargets: [double.region],
    checkScenarios: [
      { name: 'the region answers', arrange: () => {}, want: 'Reachable' },
      {
        name: 'the credential is refused',
        arrange: () => {
          double.credentials.clear();
        },
        want: 'Unauthorized',
      },
      {
        name: 'RunInstances is not allowed',
        arrange: () => {
          double.denied.add('RunInstances');
        },
        want: 'Forbidden',
      },
      {
        name: 'an AMI of the catalogue is gone',
        arrange: () => {
          double.images.delete(DEBIAN_AMI);
        },
        want: 'ImageNotFound',
      },
      {
        name: 'a subnet is gone',
        arrange: () => {
          double.subnets.delete(double.subnetOf(zoneB).subnetId);
        },
        want: 'SubnetNotFound',
      },
      {
        name: 'an instance type is not offered in the region',
        arrange: () => {
          double.instanceTypes.delete('t3.small');
        },
        want: 'InstanceTypeUnavailable',
      },
      {
        name: 'the credentials file is not mounted',
        arrange: () => rm(credentialsFile, { force: true }),
        want: 'CredentialsUnavailable',
      },
      {
        name: 'the endpoint refuses connections',
        arrange: () => double.close(),
        want: 'Unreachable',
      },
    ],
    credentialSentinel: AWS_CREDENTIAL_SENTINEL,
    rejectCredential: async () => {
      double.echoCredential = true;
      await writeFile(
        credentialsFile,
        credentialsFileText({ ...credential, sessionToken: AWS_CREDENTIAL_SENTINEL }),
      );
    },
    rotateCredential: async () => {
      const next: DoubleCredential = {
        accessKeyId: `${credential.accessKeyId.slice(0, -1)}R`,
        secretAccessKey: `${credential.secretAccessKey}-rotated`,
      };
      double.credentials.clear();
      double.credentials.set(next.accessKeyId, next);
      await writeFile(credentialsFile, credentialsFileText(next));
    },
    settle: async () => double.settle(),
  };
  return {
    provider,
    harness,
    double,
    config,
    credentialsFile,
    instanceOf,
    async cleanup() {
      await provider.close?.();
      await double.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
