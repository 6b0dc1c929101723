/**
 * The production seam: `@aws-sdk/client-ec2`. The SDK is loaded, and its
 * client built, on the first call, so building a provider costs nothing
 * and touches no network. Every call runs under the signal the decorated
 * seam hands it (the caller's, joined with the call's budget: see
 * `seam.ts`), which aborts the HTTP request; the SDK's own retries
 * (throttling, server errors) are bounded by `maxAttempts` and by that
 * budget. The credentials are resolved before each call and declared
 * secret; the SDK's errors become the provider's (`answers.ts`).
 *
 * @module
 */
import { abortable, type SecretSet } from '@proxy-op/contract';
import {
  groupView,
  instanceViews,
  listOf,
  runInput,
  subnetView,
  toBackendError,
  toFilters,
  toPermissions,
} from './answers.js';
import type { AwsConfig } from './config.js';
import {
  type AwsCredentials,
  type AwsIdentity,
  chainError,
  fileCredentials,
} from './credentials.js';
import { Ec2ApiError } from './errors.js';
import type { Ec2Seam, GroupSpec, GroupView, InstanceView } from './seam.js';

/** What the production seam is built from. */
export interface Ec2AdapterOptions {
  readonly config: AwsConfig;
  /** The caller's credentials; unset: `config.credentialsFile`, else the SDK's default chain. */
  readonly credentials?: AwsCredentials | undefined;
  /** Every credential read is added here, so the operation shell redacts it. */
  readonly secrets: SecretSet;
}

/** The production seam and the way to release its client. */
export interface Ec2Adapter {
  readonly seam: Ec2Seam;
  /** Destroys the SDK client built so far; calls after it fail. */
  close(): Promise<void>;
}

type Sdk = typeof import('@aws-sdk/client-ec2');
type Client = InstanceType<Sdk['EC2Client']>;

/** The page size of a Describe call by filters. */
const PAGE = 1000;

/** Builds the production seam over `@aws-sdk/client-ec2`. Makes no call and loads nothing yet. */
export function createEc2Adapter(o: Ec2AdapterOptions): Ec2Adapter {
  const { config, secrets } = o;
  let built: Promise<{ sdk: Sdk; client: Client }> | undefined;
  let closed = false;
  const given = o.credentials;
  // The SDK writes into the identity it signs with: a copy each time, so a frozen one works.
  const credentials: (() => Promise<AwsIdentity>) | undefined =
    given === undefined
      ? config.credentialsFile === undefined
        ? undefined
        : fileCredentials(config.credentialsFile, config.credentialsProfile)
      : typeof given === 'function'
        ? async () => ({ ...(await given()) })
        : async () => ({ ...given });

  const load = () => {
    if (closed) return Promise.reject(new Error('the aws provider is closed'));
    built ??= (async () => {
      const sdk = await import('@aws-sdk/client-ec2');
      const client = new sdk.EC2Client({
        region: config.region,
        maxAttempts: config.maxAttempts,
        ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
        ...(credentials === undefined ? {} : { credentials }),
      });
      return { sdk, client };
    })();
    built.catch(() => {
      built = undefined;
    });
    return built;
  };

  /** Resolves the credentials the SDK will sign with, and declares them secret. */
  async function identity(client: Client, signal: AbortSignal | undefined): Promise<void> {
    let id: AwsIdentity;
    try {
      id = await abortable(client.config.credentials(), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      throw chainError(err);
    }
    secrets.add(id.secretAccessKey);
    secrets.add(id.accessKeyId);
    if (id.sessionToken !== undefined) secrets.add(id.sessionToken);
  }

  /** Sends one command of EC2 action `action` under the signal; its failure as the provider's error. */
  async function send<T>(
    action: string,
    signal: AbortSignal | undefined,
    make: (sdk: Sdk) => object,
  ): Promise<T> {
    const { sdk, client } = await abortable(load(), signal);
    await identity(client, signal);
    signal?.throwIfAborted();
    try {
      // One client serves every action; the command's own input and output types are the views' business.
      const command = make(sdk) as Parameters<Client['send']>[0];
      return (await client.send(command, signal === undefined ? {} : { abortSignal: signal })) as T;
    } catch (err) {
      if (signal?.aborted) throw err;
      throw toBackendError(action, err, config.endpoint ?? `ec2.${config.region}.amazonaws.com`);
    }
  }

  /** Every page of a Describe call by filters. */
  async function pages<T>(
    action: string,
    signal: AbortSignal | undefined,
    make: (sdk: Sdk, token: string | undefined) => object,
    read: (out: Record<string, unknown>) => T[],
  ): Promise<T[]> {
    const all: T[] = [];
    let token: string | undefined;
    do {
      const out = await send<Record<string, unknown>>(action, signal, (s) => make(s, token));
      all.push(...read(out));
      token = typeof out.NextToken === 'string' && out.NextToken !== '' ? out.NextToken : undefined;
    } while (token !== undefined);
    return all;
  }

  const seam: Ec2Seam = {
    describeInstances: (query, signal) =>
      'instanceIds' in query
        ? send<Record<string, unknown>>(
            'DescribeInstances',
            signal,
            (s) => new s.DescribeInstancesCommand({ InstanceIds: [...query.instanceIds] }),
          ).then(instanceViews)
        : pages<InstanceView>(
            'DescribeInstances',
            signal,
            (s, NextToken) =>
              new s.DescribeInstancesCommand({
                Filters: toFilters(query.filters),
                MaxResults: PAGE,
                NextToken,
              }),
            instanceViews,
          ),
    runInstance: async (spec, signal) => {
      const out = await send<Record<string, unknown>>(
        'RunInstances',
        signal,
        (s) => new s.RunInstancesCommand(runInput(spec, false)),
      );
      const [inst] = instanceViews({ Reservations: [out] });
      if (inst === undefined) throw new TypeError('RunInstances: no instance in the answer');
      return inst;
    },
    terminateInstances: async (instanceIds, signal) => {
      const out = await send<Record<string, unknown>>(
        'TerminateInstances',
        signal,
        (s) => new s.TerminateInstancesCommand({ InstanceIds: [...instanceIds] }),
      );
      listOf(out.TerminatingInstances, 'TerminateInstances: TerminatingInstances');
    },
    createTags: async (resourceIds, tags, signal) => {
      await send(
        'CreateTags',
        signal,
        (s) =>
          new s.CreateTagsCommand({
            Resources: [...resourceIds],
            Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
          }),
      );
    },
    describeSecurityGroups: (filters, signal) =>
      pages<GroupView>(
        'DescribeSecurityGroups',
        signal,
        (s, NextToken) =>
          new s.DescribeSecurityGroupsCommand({
            Filters: toFilters(filters),
            MaxResults: PAGE,
            NextToken,
          }),
        (out) =>
          listOf(out.SecurityGroups, 'DescribeSecurityGroups: SecurityGroups').map(groupView),
      ),
    createSecurityGroup: async (spec, signal) => {
      const out = await send<Record<string, unknown>>(
        'CreateSecurityGroup',
        signal,
        (s) => new s.CreateSecurityGroupCommand(groupInput(spec, false)),
      );
      if (typeof out.GroupId !== 'string')
        throw new TypeError('CreateSecurityGroup: GroupId is not a string');
      return out.GroupId;
    },
    authorizeIngress: async (groupId, rules, signal) => {
      await send(
        'AuthorizeSecurityGroupIngress',
        signal,
        (s) =>
          new s.AuthorizeSecurityGroupIngressCommand({
            GroupId: groupId,
            IpPermissions: toPermissions(rules),
          }),
      );
    },
    revokeIngress: async (groupId, rules, signal) => {
      await send(
        'RevokeSecurityGroupIngress',
        signal,
        (s) =>
          new s.RevokeSecurityGroupIngressCommand({
            GroupId: groupId,
            IpPermissions: toPermissions(rules),
          }),
      );
    },
    deleteSecurityGroup: async (groupId, signal) => {
      await send(
        'DeleteSecurityGroup',
        signal,
        (s) => new s.DeleteSecurityGroupCommand({ GroupId: groupId }),
      );
    },
    describeImages: async (imageIds, signal) => {
      const out = await send<Record<string, unknown>>(
        'DescribeImages',
        signal,
        (s) => new s.DescribeImagesCommand({ ImageIds: [...imageIds] }),
      );
      return listOf(out.Images, 'DescribeImages: Images').map((i) =>
        String((i as { ImageId?: unknown }).ImageId),
      );
    },
    describeSubnets: async (subnetIds, signal) => {
      const out = await send<Record<string, unknown>>(
        'DescribeSubnets',
        signal,
        (s) => new s.DescribeSubnetsCommand({ SubnetIds: [...subnetIds] }),
      );
      return listOf(out.Subnets, 'DescribeSubnets: Subnets').map(subnetView);
    },
    describeInstanceTypes: async (types, signal) => {
      const out = await send<Record<string, unknown>>(
        'DescribeInstanceTypes',
        signal,
        (s) => new s.DescribeInstanceTypesCommand({ InstanceTypes: [...types] as never[] }),
      );
      return listOf(out.InstanceTypes, 'DescribeInstanceTypes: InstanceTypes').map((t) =>
        String((t as { InstanceType?: unknown }).InstanceType),
      );
    },
    dryRun: async (call, signal) => {
      try {
        await send(call.action, signal, (s) =>
          call.action === 'RunInstances'
            ? new s.RunInstancesCommand(runInput(call.spec, true))
            : call.action === 'CreateSecurityGroup'
              ? new s.CreateSecurityGroupCommand(groupInput(call.spec, true))
              : new s.DescribeInstancesCommand({ DryRun: true, MaxResults: 5 }),
        );
      } catch (err) {
        if (Ec2ApiError.isInstance(err) && err.ec2Code === 'DryRunOperation') return;
        throw err;
      }
      throw new TypeError(
        `${call.action} with DryRun was carried out instead of answering DryRunOperation`,
      );
    },
  };

  return {
    seam,
    async close() {
      closed = true;
      const b = built;
      built = undefined;
      if (b !== undefined) (await b.catch(() => undefined))?.client.destroy();
    },
  };
}

function groupInput(spec: GroupSpec, dryRun: boolean) {
  return {
    GroupName: spec.groupName,
    Description: spec.description,
    VpcId: spec.vpcId,
    TagSpecifications: [
      {
        ResourceType: 'security-group' as const,
        Tags: Object.entries(spec.tags).map(([Key, Value]) => ({ Key, Value })),
      },
    ],
    ...(dryRun ? { DryRun: true } : {}),
  };
}
