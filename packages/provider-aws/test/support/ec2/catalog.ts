// Test support (not a test file): the EC2 double's read-only catalogue actions: DescribeImages,
// DescribeSubnets and DescribeInstanceTypes, with EC2's errors for an ID or a type that does not
// exist (InvalidAMIID.NotFound, InvalidSubnetID.NotFound, InvalidInstanceType).
import type { Ec2Double, Handler } from './double.js';
import type { DoubleImage, DoubleSubnet } from './model.js';
import { clientError, filtersOf, globMatch, type Params, page, strings, type Xml } from './wire.js';

function filtered<T>(all: T[], p: Params, fields: (x: T) => Record<string, string>): T[] {
  const filters = filtersOf(p);
  return all.filter((x) =>
    [...filters].every(([name, values]) => {
      const f = fields(x);
      if (!(name in f))
        throw clientError('InvalidParameterValue', `The filter '${name}' is invalid`);
      return values.some((v) => globMatch(v, f[name] as string));
    }),
  );
}

function imageXml(i: DoubleImage): Xml {
  return {
    imageId: i.imageId,
    imageLocation: `${i.ownerId}/${i.name}`,
    imageState: 'available',
    imageOwnerId: i.ownerId,
    creationDate: '2025-01-15T00:00:00.000Z',
    isPublic: true,
    architecture: 'x86_64',
    imageType: 'machine',
    name: i.name,
    description: i.description,
    rootDeviceType: 'ebs',
    rootDeviceName: '/dev/sda1',
    blockDeviceMapping: [
      {
        deviceName: '/dev/sda1',
        ebs: {
          snapshotId: 'snap-0123456789abcdef0',
          volumeSize: 8,
          deleteOnTermination: true,
          volumeType: 'gp3',
          encrypted: false,
        },
      },
    ],
    virtualizationType: 'hvm',
    hypervisor: 'xen',
    enaSupport: true,
    sriovNetSupport: 'simple',
    platformDetails: 'Linux/UNIX',
    usageOperation: 'RunInstances',
    bootMode: 'uefi-preferred',
  };
}

function describeImages(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'ImageId');
  const bad = ids.find((id) => !/^ami-([0-9a-f]{8}|[0-9a-f]{17})$/.test(id));
  if (bad !== undefined)
    throw clientError('InvalidAMIID.Malformed', `Invalid id: "${bad}" (expecting "ami-...")`);
  const missing = ids.filter((id) => !d.images.has(id));
  if (missing.length > 0) {
    throw clientError(
      'InvalidAMIID.NotFound',
      missing.length === 1
        ? `The image id '[${missing[0]}]' does not exist`
        : `The image ids '[${missing.join(', ')}]' do not exist`,
    );
  }
  const all =
    ids.length > 0 ? ids.map((id) => d.images.get(id) as DoubleImage) : [...d.images.values()];
  const items = filtered(all, p, (i) => ({
    'image-id': i.imageId,
    name: i.name,
    'owner-id': i.ownerId,
    state: 'available',
    architecture: 'x86_64',
  }));
  return { imagesSet: page(items, p, { min: 5, max: 1000 }).items.map(imageXml) };
}

function subnetXml(d: Ec2Double, s: DoubleSubnet): Xml {
  return {
    subnetId: s.subnetId,
    subnetArn: `arn:aws:ec2:${d.region}:${d.accountId}:subnet/${s.subnetId}`,
    state: 'available',
    ownerId: d.accountId,
    vpcId: s.vpcId,
    cidrBlock: s.cidr,
    ipv6CidrBlockAssociationSet: [
      {
        ipv6CidrBlock: s.ipv6Cidr,
        associationId: `subnet-cidr-assoc-${s.subnetId.slice(7)}`,
        ipv6CidrBlockState: { state: 'associated' },
      },
    ],
    availableIpAddressCount: 250,
    availabilityZone: s.zone,
    availabilityZoneId: s.zoneId,
    defaultForAz: false,
    mapPublicIpOnLaunch: s.mapPublicIpOnLaunch,
    assignIpv6AddressOnCreation: s.assignIpv6AddressOnCreation,
    ipv6Native: false,
  };
}

function describeSubnets(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'SubnetId');
  const missing = ids.find((id) => !d.subnets.has(id));
  if (missing !== undefined) {
    throw clientError('InvalidSubnetID.NotFound', `The subnet ID '${missing}' does not exist`);
  }
  const all =
    ids.length > 0 ? ids.map((id) => d.subnets.get(id) as DoubleSubnet) : [...d.subnets.values()];
  const items = filtered(all, p, (s) => ({
    'subnet-id': s.subnetId,
    'vpc-id': s.vpcId,
    'availability-zone': s.zone,
    state: 'available',
  }));
  const { items: shown, next } = page(items, p, { min: 5, max: 1000 });
  return { subnetSet: shown.map((s) => subnetXml(d, s)), nextToken: next };
}

function describeInstanceTypes(d: Ec2Double, p: Params): Record<string, Xml> {
  const asked = strings(p, 'InstanceType');
  const missing = asked.filter((t) => !d.instanceTypes.has(t));
  if (missing.length > 0) {
    throw clientError(
      'InvalidInstanceType',
      `The following supplied instance types do not exist: [${missing.join(', ')}]`,
    );
  }
  const names = asked.length > 0 ? asked : [...d.instanceTypes.keys()];
  const { items, next } = page(names, p, { min: 5, max: 100 });
  return {
    instanceTypeSet: items.map((name) => {
      const t = d.instanceTypes.get(name);
      return {
        instanceType: name,
        currentGeneration: true,
        freeTierEligible: name === 't3.micro',
        supportedUsageClasses: ['on-demand', 'spot'],
        supportedRootDeviceTypes: ['ebs'],
        processorInfo: { supportedArchitectures: [t?.arch ?? 'x86_64'] },
        vCpuInfo: { defaultVCpus: t?.vcpus ?? 2 },
        memoryInfo: { sizeInMiB: t?.memoryMiB ?? 1024 },
        networkInfo: { ipv6Supported: true, maximumNetworkInterfaces: 3 },
      };
    }),
    nextToken: next,
  };
}

/** The catalogue actions. */
export const catalogHandlers: Record<string, Handler> = {
  DescribeImages: describeImages,
  DescribeSubnets: describeSubnets,
  DescribeInstanceTypes: describeInstanceTypes,
};
