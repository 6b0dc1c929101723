// Test support (not a test file): the EC2 double's instance actions (RunInstances,
// DescribeInstances, TerminateInstances, CreateTags, DeleteTags), with EC2's validation,
// idempotency by client token, eventual consistency and error codes and texts.
import { createHash, randomBytes } from 'node:crypto';
import { type Ec2Double, gmt, type Handler } from './double.js';
import { type DoubleInstance, instanceXml, STATE_CODES, USER_TERMINATED } from './model.js';
import {
  bool,
  clientError,
  Ec2Fault,
  filtersOf,
  globMatch,
  type Params,
  page,
  record,
  records,
  resourceId,
  str,
  strings,
  tagsMatch,
  type Xml,
} from './wire.js';

const INSTANCE_ID = /^i-([0-9a-f]{8}|[0-9a-f]{17})$/;
const TAGGABLE = new Set(['instance', 'volume', 'network-interface', 'spot-instances-request']);

function required(p: Params, key: string): string {
  const v = str(p, key);
  if (v === undefined || v === '') {
    throw clientError('MissingParameter', `The request must contain the parameter ${key}`);
  }
  return v;
}

/** The instances named by `InstanceId.N`: each visible, else InvalidInstanceID.NotFound (or .Malformed). */
function named(d: Ec2Double, ids: string[]): DoubleInstance[] {
  const bad = ids.find((id) => !INSTANCE_ID.test(id));
  if (bad !== undefined) throw clientError('InvalidInstanceID.Malformed', `Invalid id: "${bad}"`);
  const missing = ids.filter((id) => {
    const i = d.instances.get(id);
    return i === undefined || !d.visible(i);
  });
  if (missing.length === 1) {
    throw clientError(
      'InvalidInstanceID.NotFound',
      `The instance ID '${missing[0]}' does not exist`,
    );
  }
  if (missing.length > 1) {
    throw clientError(
      'InvalidInstanceID.NotFound',
      `The instance IDs '${missing.join(', ')}' do not exist`,
    );
  }
  return ids.map((id) => d.instances.get(id) as DoubleInstance);
}

/** Tags of a `TagSpecification` or `Tag` list, checked as EC2 checks them. */
function tagsOf(list: Params[]): Map<string, string> {
  const tags = new Map<string, string>();
  for (const t of list) {
    const key = str(t, 'Key') ?? '';
    const value = str(t, 'Value') ?? '';
    if (key === '' || key.length > 128) {
      throw clientError(
        'InvalidParameterValue',
        `Tag key must be between 1 and 128 characters: '${key}'`,
      );
    }
    if (key.toLowerCase().startsWith('aws:')) {
      throw clientError(
        'InvalidParameterValue',
        "Tag keys starting with 'aws:' are reserved for internal use",
      );
    }
    if (value.length > 256) {
      throw clientError(
        'InvalidParameterValue',
        `Tag value must be at most 256 characters for key '${key}'`,
      );
    }
    tags.set(key, value);
  }
  if (tags.size > 50) {
    throw clientError(
      'TagLimitExceeded',
      'The maximum number of Tags for a resource has been reached.',
    );
  }
  return tags;
}

/** A digest of a RunInstances request's arguments, for its client token (DryRun left out). */
function argumentsDigest(p: Params): string {
  const { DryRun: _dry, ClientToken: _token, ...rest } = p;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex');
}

function runInstances(d: Ec2Double, p: Params): Record<string, Xml> {
  const min = Number(required(p, 'MinCount'));
  const max = Number(required(p, 'MaxCount'));
  if (!(min >= 1 && max >= min)) {
    throw clientError(
      'InvalidParameterValue',
      'MinCount and MaxCount must be at least 1, MaxCount not below MinCount',
    );
  }
  if (max > 1)
    throw clientError('InvalidParameterValue', 'the double launches one instance per request');
  const token = str(p, 'ClientToken') ?? '';
  if (token.length > 64 || !/^[\x20-\x7e]*$/.test(token)) {
    throw clientError('InvalidParameterValue', 'Client token must be at most 64 ASCII characters');
  }
  const digest = argumentsDigest(p);
  if (token !== '') {
    const seen = d.tokens.get(token);
    if (seen !== undefined) {
      const i = d.instances.get(seen.instanceId) as DoubleInstance;
      if (i.state === 'terminated') {
        throw clientError(
          'IdempotentInstanceTerminated',
          'The client token you have provided is associated with a resource that is already deleted. Please use a different client token.',
        );
      }
      if (seen.digest !== digest) {
        throw clientError(
          'IdempotentParameterMismatch',
          'Arguments on this idempotent request are inconsistent with arguments used in previous request(s).',
        );
      }
      return reservation(d, i);
    }
  }
  const imageId = required(p, 'ImageId');
  if (!/^ami-([0-9a-f]{8}|[0-9a-f]{17})$/.test(imageId)) {
    throw clientError('InvalidAMIID.Malformed', `Invalid id: "${imageId}" (expecting "ami-...")`);
  }
  if (!d.images.has(imageId)) {
    throw clientError('InvalidAMIID.NotFound', `The image id '[${imageId}]' does not exist`);
  }
  const instanceType = str(p, 'InstanceType') ?? 'm1.small';
  const type = d.instanceTypes.get(instanceType);
  if (type === undefined) {
    throw clientError('InvalidParameterValue', `Invalid value '${instanceType}' for InstanceType.`);
  }
  const nics = records(p, 'NetworkInterface');
  const nic = nics[0];
  const topGroups = strings(p, 'SecurityGroupId');
  if (nic !== undefined && topGroups.length > 0) {
    throw clientError(
      'InvalidParameterCombination',
      'Network interfaces and an instance-level security groups may not be specified on the same request',
    );
  }
  if (nics.length > 1)
    throw clientError('InvalidParameterValue', 'the double launches one network interface');
  if (nic !== undefined && str(nic, 'DeviceIndex') !== '0') {
    throw clientError(
      'InvalidParameterValue',
      'The primary network interface must have device index 0',
    );
  }
  const subnetId = (nic === undefined ? undefined : str(nic, 'SubnetId')) ?? str(p, 'SubnetId');
  if (subnetId === undefined) {
    throw clientError(
      'VPCIdNotSpecified',
      'No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.',
    );
  }
  const subnet = d.subnets.get(subnetId);
  if (subnet === undefined) {
    throw clientError('InvalidSubnetID.NotFound', `The subnet ID '${subnetId}' does not exist`);
  }
  const zone = str(record(p, 'Placement') ?? {}, 'AvailabilityZone');
  if (zone !== undefined && zone !== subnet.zone) {
    throw clientError(
      'InvalidParameterValue',
      `Value (${zone}) for parameter availabilityZone is invalid. Subnet '${subnetId}' is in the availability zone ${subnet.zone}`,
    );
  }
  const groupIds = nic === undefined ? topGroups : strings(nic, 'SecurityGroupId');
  for (const g of groupIds) {
    const group = d.groups.get(g);
    if (group === undefined) {
      throw clientError(
        'InvalidGroup.NotFound',
        `The security group '${g}' does not exist in VPC '${subnet.vpcId}'`,
      );
    }
    if (group.vpcId !== subnet.vpcId) {
      throw clientError(
        'InvalidParameter',
        `Security group ${g} and subnet ${subnetId} belong to different networks.`,
      );
    }
  }
  const associate = nic === undefined ? undefined : bool(nic, 'AssociatePublicIpAddress');
  const ipv6Count = Number(
    (nic === undefined ? undefined : str(nic, 'Ipv6AddressCount')) ??
      str(p, 'Ipv6AddressCount') ??
      0,
  );
  const userData = str(p, 'UserData') ?? '';
  const decoded = Buffer.from(userData, 'base64');
  if (decoded.toString('base64').replace(/=+$/, '') !== userData.replace(/=+$/, '')) {
    throw clientError('InvalidParameterValue', 'Invalid BASE64 encoding of user data.');
  }
  if (decoded.byteLength > 16_384) {
    throw clientError('InvalidParameterValue', 'User data is limited to 16384 bytes');
  }
  const md = record(p, 'MetadataOptions') ?? {};
  const httpTokens = str(md, 'HttpTokens') ?? 'optional';
  const hopLimit = Number(str(md, 'HttpPutResponseHopLimit') ?? 1);
  const httpEndpoint = str(md, 'HttpEndpoint') ?? 'enabled';
  if (!['optional', 'required'].includes(httpTokens)) {
    throw clientError(
      'InvalidParameterValue',
      `Value (${httpTokens}) for parameter HttpTokens is invalid.`,
    );
  }
  if (!(Number.isInteger(hopLimit) && hopLimit >= 1 && hopLimit <= 64)) {
    throw clientError(
      'InvalidParameterValue',
      `Value (${hopLimit}) for parameter HttpPutResponseHopLimit is invalid.`,
    );
  }
  const market = record(p, 'InstanceMarketOptions');
  const spotOptions = record(market, 'SpotOptions') ?? {};
  const spot = str(market ?? {}, 'MarketType') === 'spot';
  if (spot) {
    const kind = str(spotOptions, 'SpotInstanceType') ?? 'one-time';
    const behaviour = str(spotOptions, 'InstanceInterruptionBehavior') ?? 'terminate';
    if (kind === 'one-time' && behaviour !== 'terminate') {
      throw clientError(
        'InvalidParameterCombination',
        `The interruption behavior '${behaviour}' is not supported for one-time Spot Instance requests. Use 'terminate'.`,
      );
    }
  }
  const specs = new Map<string, Map<string, string>>();
  for (const spec of records(p, 'TagSpecification')) {
    const kind = str(spec, 'ResourceType') ?? '';
    if (!TAGGABLE.has(kind) || (kind === 'spot-instances-request' && !spot)) {
      throw clientError(
        'InvalidParameterValue',
        `'${kind}' is not a valid taggable resource type for this operation.`,
      );
    }
    specs.set(kind, tagsOf(records(spec, 'Tag')));
  }
  if (d.insufficientCapacity) {
    throw new Ec2Fault(
      500,
      'InsufficientInstanceCapacity',
      spot
        ? 'There is no Spot capacity available that matches your request.'
        : `We currently do not have sufficient ${instanceType} capacity in the Availability Zone you requested (${subnet.zone}). Our system will be working on provisioning additional capacity. You can currently get ${instanceType} capacity by not specifying an Availability Zone in your request or choosing ${d.zones.filter((z) => z !== subnet.zone).join(', ')}.`,
    );
  }
  if (d.vcpuLimit !== undefined) {
    const used = d
      .liveInstances()
      .reduce((n, i) => n + (d.instanceTypes.get(i.instanceType)?.vcpus ?? 0), 0);
    if (used + type.vcpus > d.vcpuLimit) {
      throw clientError(
        'VcpuLimitExceeded',
        `You have requested more vCPU capacity than your current vCPU limit of ${d.vcpuLimit} allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.`,
      );
    }
  }
  const n = d.instances.size + 10;
  const now = new Date();
  const i: DoubleInstance = {
    instanceId: resourceId('i'),
    reservationId: resourceId('r'),
    imageId,
    instanceType,
    zone: subnet.zone,
    subnetId,
    vpcId: subnet.vpcId,
    state: 'pending',
    stateReason: undefined,
    transitionReason: '',
    launchTime: new Date(Math.floor(now.getTime() / 1000) * 1000),
    clientToken: token,
    tags: specs.get('instance') ?? new Map(),
    publicIp: undefined,
    privateIp: `${subnet.cidr.split('.').slice(0, 3).join('.')}.${n % 250}`,
    ipv6:
      ipv6Count > 0 || subnet.assignIpv6AddressOnCreation
        ? `${subnet.ipv6Cidr.replace(/::\/64$/, '')}::${(n % 65535).toString(16)}`
        : undefined,
    associatePublic: associate ?? subnet.mapPublicIpOnLaunch,
    groupIds: groupIds.length > 0 ? groupIds : [],
    spot: spot
      ? {
          requestId: `sir-${randomBytes(4).toString('hex')}`,
          maxPrice: str(spotOptions, 'MaxPrice'),
        }
      : undefined,
    metadata: { httpTokens, hopLimit, httpEndpoint },
    userData,
    visibleAt: now.getTime() + d.consistencyMs,
    goneAt: undefined,
    eniId: resourceId('eni'),
    volumeId: resourceId('vol'),
    macAddress: `06:${randomBytes(5).toString('hex').match(/../g)?.join(':')}`,
    otherTags: new Map([...specs].filter(([k]) => k !== 'instance')),
  };
  d.instances.set(i.instanceId, i);
  if (token !== '') d.tokens.set(token, { instanceId: i.instanceId, digest });
  d.later(d.bootMs, () => d.boot(i));
  return reservation(d, i);
}

function reservation(d: Ec2Double, i: DoubleInstance): Record<string, Xml> {
  return {
    reservationId: i.reservationId,
    ownerId: d.accountId,
    groupSet: [],
    instancesSet: [instanceXml(i, d.accountId, (g) => d.groupName(g))],
  };
}

/** Whether an instance passes one DescribeInstances filter. */
function passes(i: DoubleInstance, name: string, values: string[]): boolean {
  const tag = tagsMatch(i.tags, name, values);
  if (tag !== undefined) return tag;
  const field: Record<string, string | undefined> = {
    'instance-id': i.instanceId,
    'instance-state-name': i.state,
    'instance-state-code': String(STATE_CODES[i.state]),
    'client-token': i.clientToken,
    'subnet-id': i.subnetId,
    'vpc-id': i.vpcId,
    'availability-zone': i.zone,
    'instance-type': i.instanceType,
    'image-id': i.imageId,
    'instance-lifecycle': i.spot === undefined ? undefined : 'spot',
    'ip-address': i.publicIp,
    'reservation-id': i.reservationId,
  };
  if (!(name in field))
    throw clientError('InvalidParameterValue', `The filter '${name}' is invalid`);
  const v = field[name];
  return v !== undefined && values.some((x) => globMatch(x, v));
}

function describeInstances(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'InstanceId');
  if (ids.length > 0 && str(p, 'MaxResults') !== undefined) {
    throw clientError(
      'InvalidParameterCombination',
      'The parameter instancesSet cannot be used with the parameter maxResults',
    );
  }
  const filters = filtersOf(p);
  let all = ids.length > 0 ? named(d, ids) : [...d.instances.values()].filter((i) => d.visible(i));
  all = all
    .filter((i) => [...filters].every(([name, values]) => passes(i, name, values)))
    .sort((a, b) => a.launchTime.getTime() - b.launchTime.getTime());
  const { items, next } = page(all, p, { min: 5, max: 1000 });
  const reservations = new Map<string, DoubleInstance[]>();
  for (const i of items)
    reservations.set(i.reservationId, [...(reservations.get(i.reservationId) ?? []), i]);
  return {
    reservationSet: [...reservations].map(([reservationId, insts]) => ({
      reservationId,
      ownerId: d.accountId,
      groupSet: [],
      instancesSet: insts.map((i) => instanceXml(i, d.accountId, (g) => d.groupName(g))),
    })),
    nextToken: next,
  };
}

async function terminateInstances(d: Ec2Double, p: Params): Promise<Record<string, Xml>> {
  const ids = strings(p, 'InstanceId');
  if (ids.length === 0)
    throw clientError('MissingParameter', 'The request must contain the parameter InstanceId');
  const insts = named(d, ids);
  for (const i of insts) await d.takeTerminateHold(i.instanceId)?.hold();
  const changes = insts.map((i) => {
    const previous = i.state;
    d.terminate(i, USER_TERMINATED, `User initiated (${gmt(new Date())})`);
    return {
      instanceId: i.instanceId,
      currentState: { code: STATE_CODES[i.state] ?? 0, name: i.state },
      previousState: { code: STATE_CODES[previous] ?? 0, name: previous },
    };
  });
  return { instancesSet: changes };
}

/** The tags of a resource named by `ResourceId.N`: a visible instance or a security group. */
function taggable(d: Ec2Double, id: string): Map<string, string> {
  if (id.startsWith('i-')) return (named(d, [id])[0] as DoubleInstance).tags;
  if (id.startsWith('sg-')) {
    const g = d.groups.get(id);
    if (g === undefined)
      throw clientError('InvalidGroup.NotFound', `The security group '${id}' does not exist`);
    return g.tags;
  }
  throw clientError('InvalidID', `The ID '${id}' is not valid`);
}

function createTags(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'ResourceId');
  if (ids.length === 0)
    throw clientError('MissingParameter', 'The request must contain the parameter ResourceId');
  const tags = tagsOf(records(p, 'Tag'));
  const targets = ids.map((id) => taggable(d, id));
  for (const t of targets) {
    for (const [k, v] of tags) t.set(k, v);
    if (t.size > 50)
      throw clientError(
        'TagLimitExceeded',
        'The maximum number of Tags for a resource has been reached.',
      );
  }
  return { return: true };
}

function deleteTags(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'ResourceId');
  if (ids.length === 0)
    throw clientError('MissingParameter', 'The request must contain the parameter ResourceId');
  const targets = ids.map((id) => taggable(d, id));
  const keys = records(p, 'Tag');
  for (const t of targets) {
    if (keys.length === 0) t.clear();
    for (const k of keys) {
      const key = str(k, 'Key') ?? '';
      const value = str(k, 'Value');
      if (value === undefined || t.get(key) === value) t.delete(key);
    }
  }
  return { return: true };
}

/** The instance actions. */
export const instanceHandlers: Record<string, Handler> = {
  RunInstances: runInstances,
  DescribeInstances: describeInstances,
  TerminateInstances: terminateInstances,
  CreateTags: createTags,
  DeleteTags: deleteTags,
};
