/**
 * What goes to and comes from `@aws-sdk/client-ec2`: the SDK's outputs read
 * into the seam's views (plainly: a list that is not a list, an instance
 * without an ID, is a `TypeError`, which the operation shell reports as a
 * malformed answer), the seam's specs written as the SDK's inputs, and the
 * SDK's errors turned into the provider's.
 *
 * @module
 */
import { Ec2ApiError } from './errors.js';
import type { Ec2Filter, GroupView, InstanceView, RuleView, RunSpec, SubnetView } from './seam.js';

type Obj = Record<string, unknown>;

/** `v` as a list, or a TypeError naming `what`. */
export function listOf(v: unknown, what: string): Obj[] {
  if (!Array.isArray(v)) throw new TypeError(`${what} is not a list`);
  return v as Obj[];
}

function text(v: unknown, what: string): string {
  if (typeof v !== 'string' || v === '') throw new TypeError(`${what} is not a string`);
  return v;
}

function optional(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Tags (`[{ Key, Value }]`, or nothing) as a record. */
export function tagsOf(v: unknown): Record<string, string> {
  if (v === undefined) return {};
  const out: Record<string, string> = {};
  for (const t of listOf(v, 'Tags')) {
    if (typeof t.Key === 'string') out[t.Key] = typeof t.Value === 'string' ? t.Value : '';
  }
  return out;
}

/** The instances of a DescribeInstances (or RunInstances) answer. */
export function instanceViews(out: Obj): InstanceView[] {
  const views: InstanceView[] = [];
  for (const r of listOf(out.Reservations, 'DescribeInstances: Reservations')) {
    for (const i of listOf(r.Instances, 'DescribeInstances: Instances')) {
      const state = (i.State ?? {}) as Obj;
      const reason = (i.StateReason ?? {}) as Obj;
      const nic = (Array.isArray(i.NetworkInterfaces) ? (i.NetworkInterfaces[0] ?? {}) : {}) as Obj;
      const v6 = Array.isArray(nic.Ipv6Addresses)
        ? (nic.Ipv6Addresses[0] as Obj | undefined)
        : undefined;
      if (!(i.LaunchTime instanceof Date))
        throw new TypeError('DescribeInstances: LaunchTime is not a time');
      views.push({
        instanceId: text(i.InstanceId, 'DescribeInstances: InstanceId'),
        state: text(state.Name, 'DescribeInstances: State.Name'),
        stateReason: optional(reason.Code),
        stateReasonMessage: optional(reason.Message),
        tags: tagsOf(i.Tags),
        zone: text(
          ((i.Placement ?? {}) as Obj).AvailabilityZone,
          'DescribeInstances: Placement.AvailabilityZone',
        ),
        launchTime: i.LaunchTime,
        clientToken: typeof i.ClientToken === 'string' ? i.ClientToken : '',
        publicIp: optional(i.PublicIpAddress),
        privateIp: optional(i.PrivateIpAddress),
        ipv6: optional(i.Ipv6Address) ?? optional(v6?.Ipv6Address),
        spot: i.InstanceLifecycle === 'spot',
      });
    }
  }
  return views;
}

/** One security group of a DescribeSecurityGroups answer. */
export function groupView(g: Obj): GroupView {
  const ingress: RuleView[] = [];
  for (const p of listOf(g.IpPermissions ?? [], 'DescribeSecurityGroups: IpPermissions')) {
    const protocol = String(p.IpProtocol);
    const fromPort = typeof p.FromPort === 'number' ? p.FromPort : -1;
    const toPort = typeof p.ToPort === 'number' ? p.ToPort : -1;
    for (const r of listOf(p.IpRanges ?? [], 'IpRanges')) {
      ingress.push({ protocol, fromPort, toPort, cidr: String(r.CidrIp) });
    }
    for (const r of listOf(p.Ipv6Ranges ?? [], 'Ipv6Ranges')) {
      ingress.push({ protocol, fromPort, toPort, cidr: String(r.CidrIpv6) });
    }
  }
  return {
    groupId: text(g.GroupId, 'DescribeSecurityGroups: GroupId'),
    groupName: text(g.GroupName, 'DescribeSecurityGroups: GroupName'),
    vpcId: typeof g.VpcId === 'string' ? g.VpcId : '',
    tags: tagsOf(g.Tags),
    ingress,
  };
}

/** One subnet of a DescribeSubnets answer. */
export function subnetView(s: Obj): SubnetView {
  return {
    subnetId: text(s.SubnetId, 'DescribeSubnets: SubnetId'),
    zone: text(s.AvailabilityZone, 'DescribeSubnets: AvailabilityZone'),
    vpcId: text(s.VpcId, 'DescribeSubnets: VpcId'),
  };
}

/** Filters as the SDK takes them. */
export function toFilters(filters: readonly Ec2Filter[]): { Name: string; Values: string[] }[] {
  return filters.map((f) => ({ Name: f.name, Values: [...f.values] }));
}

/** Ingress rules as `IpPermissions`, one permission per protocol and port range. */
export function toPermissions(rules: readonly RuleView[]) {
  const perms = new Map<
    string,
    {
      IpProtocol: string;
      FromPort: number;
      ToPort: number;
      IpRanges: { CidrIp: string }[];
      Ipv6Ranges: { CidrIpv6: string }[];
    }
  >();
  for (const r of rules) {
    const key = `${r.protocol}/${r.fromPort}/${r.toPort}`;
    const p = perms.get(key) ?? {
      IpProtocol: r.protocol,
      FromPort: r.fromPort,
      ToPort: r.toPort,
      IpRanges: [],
      Ipv6Ranges: [],
    };
    if (r.cidr.includes(':')) p.Ipv6Ranges.push({ CidrIpv6: r.cidr });
    else p.IpRanges.push({ CidrIp: r.cidr });
    perms.set(key, p);
  }
  return [...perms.values()];
}

/** A launch as RunInstances takes it: one instance, tagged in the same call, IMDSv2 only. */
export function runInput(spec: RunSpec, dryRun: boolean) {
  const tags = Object.entries(spec.tags).map(([Key, Value]) => ({ Key, Value }));
  const kinds: ('instance' | 'volume' | 'network-interface' | 'spot-instances-request')[] = [
    'instance',
    'volume',
    'network-interface',
  ];
  if (spec.spot !== undefined) kinds.push('spot-instances-request');
  return {
    ImageId: spec.imageId,
    InstanceType: spec.instanceType as never,
    MinCount: 1,
    MaxCount: 1,
    ClientToken: spec.clientToken,
    UserData: spec.userData,
    NetworkInterfaces: [
      {
        DeviceIndex: 0,
        SubnetId: spec.subnetId,
        Groups: [...spec.groupIds],
        AssociatePublicIpAddress: spec.associatePublicIp,
        DeleteOnTermination: true,
        ...(spec.ipv6 ? { Ipv6AddressCount: 1 } : {}),
      },
    ],
    TagSpecifications: kinds.map((ResourceType) => ({ ResourceType, Tags: tags })),
    MetadataOptions: {
      HttpTokens: 'required' as const,
      HttpPutResponseHopLimit: 1,
      HttpEndpoint: 'enabled' as const,
    },
    ...(spec.spot === undefined
      ? {}
      : {
          InstanceMarketOptions: {
            MarketType: 'spot' as const,
            SpotOptions: {
              SpotInstanceType: 'one-time' as const,
              InstanceInterruptionBehavior: 'terminate' as const,
              ...(spec.spot.maxPrice === undefined ? {} : { MaxPrice: spec.spot.maxPrice }),
            },
          },
        }),
    ...(dryRun ? { DryRun: true } : {}),
  };
}

const ENCODED = 'Encoded authorization failure message:';

/**
 * What the SDK threw for EC2 action `action`, as the provider's error: an
 * EC2 error answer is an {@link Ec2ApiError} (an encoded authorization
 * message kept out of its message), a call that got no answer one with the
 * transport's code and no status; a malformed answer (`TypeError`,
 * `SyntaxError`) and an abort are passed on as they are.
 */
export function toBackendError(action: string, err: unknown, endpoint: string): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as Error & {
    $metadata?: { httpStatusCode?: number; requestId?: string };
    code?: unknown;
    $fault?: unknown;
  };
  if (e.name === 'AbortError') return err;
  if (e.$metadata !== undefined && e.$fault !== undefined) {
    let message = e.message;
    let encodedMessage: string | undefined;
    const at = message.indexOf(ENCODED);
    if (at >= 0) {
      encodedMessage = message.slice(at + ENCODED.length).trim();
      message = `${message.slice(0, at).trim()} (the encoded authorization message is left out)`;
    }
    return new Ec2ApiError({
      action,
      ec2Code: e.name,
      message: `ec2:${action} failed: ${e.name}: ${message}`,
      httpStatus: e.$metadata.httpStatusCode,
      requestId: e.$metadata.requestId,
      encodedMessage,
    });
  }
  if (typeof e.code === 'string') {
    return new Ec2ApiError({
      action,
      ec2Code: e.code,
      message: `ec2:${action}: no answer from ${endpoint} (${e.code})`,
    });
  }
  if (err instanceof TypeError || err instanceof SyntaxError || err instanceof RangeError)
    return err;
  return new Ec2ApiError({
    action,
    ec2Code: e.name,
    message: `ec2:${action}: ${e.message || e.name}`,
  });
}
