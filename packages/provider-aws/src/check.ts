/**
 * The Checker: one target, the region, checked with six requests: the
 * configured subnets (DescribeSubnets: they exist, in their zones and in
 * `vpcId`), AMIs (DescribeImages) and instance types
 * (DescribeInstanceTypes) exist in the region, and the permissions to
 * launch, to make a security group and to list instances, each asked with
 * `DryRun` (DryRunOperation: allowed; UnauthorizedOperation: the missing
 * permission, named). The shell answers `Timeout` for a round that ended
 * or a call past its budget; the `failed` hook names the reason of every
 * other failure it knows.
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  formatMark,
  type ImplementationChecker,
  Reason,
} from '@proxy-op/contract';
import { CredentialsError, Ec2ApiError } from './errors.js';
import type { Runtime } from './runtime.js';
import { groupNameOf, NAME_TAG } from './tags.js';

/** The `aws` provider's own Checker reasons, each fixed by a different admin action. */
export const AwsReason = Object.freeze({
  /** No credentials found, or the credentials file cannot be used: mount the Secret or give the role. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** An AMI of `images` does not exist in the region (or is not shared with the account): fix `images`. */
  ImageNotFound: 'ImageNotFound',
  /** A subnet of `subnets` does not exist, or is not in its zone or in `vpcId`: fix `subnets` or `vpcId`. */
  SubnetNotFound: 'SubnetNotFound',
  /** An instance type of `instanceTypes` does not exist in the region: fix `instanceTypes`. */
  InstanceTypeUnavailable: 'InstanceTypeUnavailable',
} as const);

/** Thrown by a step of the check that found the config wrong: the answer it names. */
class Finding extends Error {
  readonly answer: CheckAnswer;
  constructor(answer: CheckAnswer) {
    super(answer.message);
    this.answer = answer;
  }
}

const PROBE_NAME = 'proxy-op-check';

/** The Checker over `rt`: the region, probed as the module comment says. */
export function checker(rt: Runtime): ImplementationChecker {
  const c = rt.config;
  return {
    targets: (): CheckTarget[] => [
      {
        target: c.region,
        address: new URL(c.endpoint ?? `https://ec2.${c.region}.amazonaws.com`).host,
        details: {
          region: c.region,
          vpcId: c.vpcId,
          zones: Object.keys(c.subnets).join(','),
          ...(c.endpoint === undefined ? {} : { endpoint: c.endpoint }),
        },
      },
    ],
    check: async (_target, ctx) => {
      try {
        await checkConfig(rt, ctx);
      } catch (err) {
        if (err instanceof Finding) return err.answer;
        throw err;
      }
      return {
        reason: Reason.Reachable,
        message: 'subnets, AMIs and instance types exist; launching is allowed',
      };
    },
    failed,
  };
}

async function checkConfig(rt: Runtime, ctx: CheckContext): Promise<void> {
  const c = rt.config;
  const zones = Object.keys(c.subnets);
  const subnets = await rt.seam.describeSubnets(Object.values(c.subnets), ctx.signal);
  for (const zone of zones) {
    const id = c.subnets[zone] as string;
    const s = subnets.find((x) => x.subnetId === id);
    const problem =
      s === undefined
        ? 'was not listed'
        : s.zone !== zone
          ? `is in ${s.zone}, not ${zone}`
          : s.vpcId !== c.vpcId
            ? `is in ${s.vpcId}, not ${c.vpcId} (vpcId)`
            : undefined;
    if (problem !== undefined) {
      throw new Finding({
        reason: AwsReason.SubnetNotFound,
        message: `subnets.${zone}: ${id} ${problem}`,
      });
    }
  }
  ctx.details.subnets = 'ok';
  await rt.seam.describeImages([...new Set(Object.values(c.images))], ctx.signal);
  ctx.details.images = 'ok';
  await rt.seam.describeInstanceTypes(c.instanceTypes, ctx.signal);
  ctx.details.instanceTypes = 'ok';
  const mark = formatMark({ uid: '', installation: 'check', createdAt: new Date() });
  const tags = { [NAME_TAG]: PROBE_NAME, ...mark };
  const zone = zones[0] as string;
  await rt.seam.dryRun(
    {
      action: 'RunInstances',
      spec: {
        name: PROBE_NAME,
        imageId: Object.values(c.images)[0] as string,
        instanceType: c.instanceTypes[0] as string,
        subnetId: c.subnets[zone] as string,
        groupIds: [...c.securityGroup.extraGroupIds],
        associatePublicIp: c.addressMode === 'public',
        ipv6: c.ipv6,
        userData: '',
        clientToken: `${PROBE_NAME}-${Date.now()}`,
        tags,
        spot: c.market === 'spot' ? { maxPrice: c.spotMaxPrice } : undefined,
      },
    },
    ctx.signal,
  );
  await rt.seam.dryRun(
    {
      action: 'CreateSecurityGroup',
      spec: {
        groupName: groupNameOf(PROBE_NAME),
        description: 'proxy-op: permission check',
        vpcId: c.vpcId,
        tags,
      },
    },
    ctx.signal,
  );
  await rt.seam.dryRun({ action: 'DescribeInstances' }, ctx.signal);
  ctx.details.permissions = 'ok';
}

/**
 * The reason of a failed check: missing or unusable credentials;
 * `AuthFailure` and its kin Unauthorized; `UnauthorizedOperation`
 * Forbidden, naming the action; a missing AMI, subnet or instance type its
 * own reason; no answer at all Unreachable. The EC2 code and status go
 * into the details. Anything else is left to the shell (`APIError`).
 */
function failed(err: unknown, ctx: CheckContext): CheckAnswer | undefined {
  if (CredentialsError.isInstance(err)) {
    return { reason: AwsReason.CredentialsUnavailable, message: err.message };
  }
  if (!Ec2ApiError.isInstance(err)) return undefined;
  ctx.details.ec2Code = err.ec2Code;
  if (err.httpStatus !== undefined) ctx.details.httpStatus = err.httpStatus;
  const code = err.ec2Code;
  if (err.httpStatus === undefined) return { reason: Reason.Unreachable, message: err.message };
  if (
    [
      'AuthFailure',
      'SignatureDoesNotMatch',
      'InvalidClientTokenId',
      'MissingAuthenticationToken',
    ].includes(code)
  ) {
    return { reason: Reason.Unauthorized, message: err.message };
  }
  if (code === 'UnauthorizedOperation') {
    return {
      reason: Reason.Forbidden,
      message: `ec2:${err.action} is not allowed: ${err.message}`,
    };
  }
  if (code.startsWith('InvalidAMIID.'))
    return { reason: AwsReason.ImageNotFound, message: err.message };
  if (code.startsWith('InvalidSubnetID.'))
    return { reason: AwsReason.SubnetNotFound, message: err.message };
  if (code === 'InvalidInstanceType')
    return { reason: AwsReason.InstanceTypeUnavailable, message: err.message };
  return undefined;
}
