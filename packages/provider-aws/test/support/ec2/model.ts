// Test support (not a test file): the resources the EC2 double keeps (instances, security
// groups, the catalogue of images, subnets and instance types) and how each is written in an
// answer, with the element names of the EC2 API (API version 2016-11-15).
import { ec2Time, tagSet, type Xml } from './wire.js';

/** An instance's state codes, by name, as EC2 reports them. */
export const STATE_CODES: Readonly<Record<string, number>> = {
  pending: 0,
  running: 16,
  'shutting-down': 32,
  terminated: 48,
  stopping: 64,
  stopped: 80,
};

/** Why an instance changed state: `stateReason` (a code and a message). */
export interface StateReason {
  readonly code: string;
  readonly message: string;
}

/** The state reason of an instance a client terminated (TerminateInstances). */
export const USER_TERMINATED: StateReason = {
  code: 'Client.UserInitiatedShutdown',
  message: 'Client.UserInitiatedShutdown: User initiated shutdown',
};

/** The state reason of a Spot Instance EC2 took back. */
export const SPOT_TERMINATED: StateReason = {
  code: 'Server.SpotInstanceTermination',
  message: 'Server.SpotInstanceTermination: Spot instance termination',
};

/** An instance as the double keeps it. */
export interface DoubleInstance {
  readonly instanceId: string;
  readonly reservationId: string;
  readonly imageId: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly subnetId: string;
  readonly vpcId: string;
  state: string;
  stateReason: StateReason | undefined;
  /** `reason`: `User initiated (…)` and the like; empty while nothing happened. */
  transitionReason: string;
  readonly launchTime: Date;
  readonly clientToken: string;
  readonly tags: Map<string, string>;
  publicIp: string | undefined;
  readonly privateIp: string;
  ipv6: string | undefined;
  /** Whether the instance gets a public IPv4 address while it runs. */
  readonly associatePublic: boolean;
  readonly groupIds: string[];
  /** Set for a Spot Instance. */
  readonly spot: { readonly requestId: string; readonly maxPrice?: string | undefined } | undefined;
  readonly metadata: {
    readonly httpTokens: string;
    readonly hopLimit: number;
    readonly httpEndpoint: string;
  };
  /** The user data as sent (base64). */
  readonly userData: string;
  /** When Describe* and calls naming the ID first see the instance (eventual consistency). */
  visibleAt: number;
  /** When a terminated instance leaves every answer. */
  goneAt: number | undefined;
  readonly eniId: string;
  readonly volumeId: string;
  readonly macAddress: string;
  /** Tags of the volume, network interface and Spot request (TagSpecifications). */
  readonly otherTags: Map<string, Map<string, string>>;
}

/** A security group rule: one protocol and port range, from one CIDR. */
export interface DoubleRule {
  readonly protocol: string;
  readonly fromPort: number;
  readonly toPort: number;
  readonly cidr: string;
  readonly ruleId: string;
}

/** A security group as the double keeps it. */
export interface DoubleGroup {
  readonly groupId: string;
  readonly groupName: string;
  readonly description: string;
  readonly vpcId: string;
  readonly tags: Map<string, string>;
  readonly ingress: DoubleRule[];
}

/** A subnet of the double's VPC. */
export interface DoubleSubnet {
  readonly subnetId: string;
  readonly zone: string;
  readonly zoneId: string;
  readonly vpcId: string;
  readonly cidr: string;
  readonly ipv6Cidr: string;
  mapPublicIpOnLaunch: boolean;
  assignIpv6AddressOnCreation: boolean;
}

/** An AMI of the double's catalogue. */
export interface DoubleImage {
  readonly imageId: string;
  readonly name: string;
  readonly ownerId: string;
  readonly description: string;
}

/** An instance type of the catalogue: vCPUs and memory. */
export interface DoubleInstanceType {
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly arch: 'x86_64' | 'arm64';
}

/** One `instancesSet` item of an instance. */
export function instanceXml(
  i: DoubleInstance,
  accountId: string,
  groupNames: (id: string) => string,
): Xml {
  const groups = i.groupIds.map((groupId) => ({ groupId, groupName: groupNames(groupId) }));
  const association =
    i.publicIp === undefined
      ? undefined
      : { publicIp: i.publicIp, publicDnsName: '', ipOwnerId: 'amazon' };
  const attached = i.state !== 'terminated';
  return {
    instanceId: i.instanceId,
    imageId: i.imageId,
    instanceState: { code: STATE_CODES[i.state] ?? 0, name: i.state },
    privateDnsName: attached
      ? `ip-${i.privateIp.replace(/\./g, '-')}.${i.zone.slice(0, -1)}.compute.internal`
      : '',
    dnsName: '',
    reason: i.transitionReason,
    amiLaunchIndex: 0,
    productCodes: [],
    instanceType: i.instanceType,
    launchTime: ec2Time(i.launchTime),
    placement: { availabilityZone: i.zone, groupName: '', tenancy: 'default' },
    monitoring: { state: 'disabled' },
    subnetId: attached ? i.subnetId : undefined,
    vpcId: attached ? i.vpcId : undefined,
    privateIpAddress: attached ? i.privateIp : undefined,
    ipAddress: i.publicIp,
    sourceDestCheck: attached ? true : undefined,
    groupSet: attached ? groups : [],
    stateReason: i.stateReason === undefined ? undefined : { ...i.stateReason },
    architecture: 'x86_64',
    rootDeviceType: 'ebs',
    rootDeviceName: '/dev/sda1',
    blockDeviceMapping: attached
      ? [
          {
            deviceName: '/dev/sda1',
            ebs: {
              volumeId: i.volumeId,
              status: 'attached',
              attachTime: ec2Time(i.launchTime),
              deleteOnTermination: true,
            },
          },
        ]
      : [],
    instanceLifecycle: i.spot === undefined ? undefined : 'spot',
    spotInstanceRequestId: i.spot?.requestId,
    virtualizationType: 'hvm',
    clientToken: i.clientToken,
    tagSet: i.tags.size === 0 ? undefined : tagSet(i.tags),
    hypervisor: 'xen',
    networkInterfaceSet: attached
      ? [
          {
            networkInterfaceId: i.eniId,
            subnetId: i.subnetId,
            vpcId: i.vpcId,
            description: '',
            ownerId: accountId,
            status: 'in-use',
            macAddress: i.macAddress,
            privateIpAddress: i.privateIp,
            sourceDestCheck: true,
            groupSet: groups,
            attachment: {
              attachmentId: `eni-attach-${i.eniId.slice(4)}`,
              deviceIndex: 0,
              status: 'attached',
              attachTime: ec2Time(i.launchTime),
              deleteOnTermination: true,
              networkCardIndex: 0,
            },
            association,
            privateIpAddressesSet: [{ privateIpAddress: i.privateIp, primary: true, association }],
            ipv6AddressesSet:
              i.ipv6 === undefined ? [] : [{ ipv6Address: i.ipv6, isPrimaryIpv6: false }],
            interfaceType: 'interface',
          },
        ]
      : [],
    ebsOptimized: false,
    enaSupport: true,
    metadataOptions: {
      state: 'applied',
      httpTokens: i.metadata.httpTokens,
      httpPutResponseHopLimit: i.metadata.hopLimit,
      httpEndpoint: i.metadata.httpEndpoint,
      httpProtocolIpv6: 'disabled',
      instanceMetadataTags: 'disabled',
    },
    ipv6Address: i.ipv6,
    platformDetails: 'Linux/UNIX',
    usageOperation: 'RunInstances',
  };
}

/** One `securityGroupInfo` item: rules merged by protocol and port range, as EC2 lists them. */
export function groupXml(g: DoubleGroup, accountId: string, region: string): Xml {
  const perms = new Map<
    string,
    { proto: string; from: number; to: number; v4: string[]; v6: string[] }
  >();
  for (const r of g.ingress) {
    const key = `${r.protocol}/${r.fromPort}/${r.toPort}`;
    const p = perms.get(key) ?? {
      proto: r.protocol,
      from: r.fromPort,
      to: r.toPort,
      v4: [],
      v6: [],
    };
    (r.cidr.includes(':') ? p.v6 : p.v4).push(r.cidr);
    perms.set(key, p);
  }
  return {
    ownerId: accountId,
    groupId: g.groupId,
    groupName: g.groupName,
    groupDescription: g.description,
    vpcId: g.vpcId,
    ipPermissions: [...perms.values()].map((p) => ({
      ipProtocol: p.proto,
      fromPort: p.from,
      toPort: p.to,
      groups: [],
      ipRanges: p.v4.map((cidrIp) => ({ cidrIp })),
      ipv6Ranges: p.v6.map((cidrIpv6) => ({ cidrIpv6 })),
      prefixListIds: [],
    })),
    ipPermissionsEgress: [
      {
        ipProtocol: '-1',
        groups: [],
        ipRanges: [{ cidrIp: '0.0.0.0/0' }],
        ipv6Ranges: [],
        prefixListIds: [],
      },
    ],
    tagSet: g.tags.size === 0 ? undefined : tagSet(g.tags),
    securityGroupArn: `arn:aws:ec2:${region}:${accountId}:security-group/${g.groupId}`,
  };
}
