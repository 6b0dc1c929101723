// Test support (not a test file): the EC2 double's security group actions (create, describe,
// authorize and revoke ingress, delete), with EC2's validation, codes and texts: names unique
// per VPC, `GroupName` looked up in the default VPC only (a VPC's groups are found with the
// `group-name` filter), duplicate and missing rules refused, a group in use not deletable.
import type { Ec2Double, Handler } from './double.js';
import { type DoubleGroup, type DoubleRule, groupXml } from './model.js';
import {
  clientError,
  filtersOf,
  globMatch,
  type Params,
  page,
  records,
  resourceId,
  str,
  strings,
  tagSet,
  tagsMatch,
  type Xml,
} from './wire.js';

function group(d: Ec2Double, id: string | undefined): DoubleGroup {
  if (id === undefined || id === '') {
    throw clientError('MissingParameter', 'The request must contain the parameter groupId');
  }
  if (!/^sg-([0-9a-f]{8}|[0-9a-f]{17})$/.test(id)) {
    throw clientError('InvalidGroupId.Malformed', `Invalid id: "${id}" (expecting "sg-...")`);
  }
  const g = d.groups.get(id);
  if (g === undefined)
    throw clientError('InvalidGroup.NotFound', `The security group '${id}' does not exist`);
  return g;
}

/** The rules of `IpPermissions.N`, one per CIDR. */
function rulesOf(p: Params): Omit<DoubleRule, 'ruleId'>[] {
  const out: Omit<DoubleRule, 'ruleId'>[] = [];
  for (const perm of records(p, 'IpPermissions')) {
    const protocol = str(perm, 'IpProtocol') ?? '';
    if (!['tcp', 'udp', 'icmp', '-1', '6', '17'].includes(protocol)) {
      throw clientError(
        'InvalidParameterValue',
        `Invalid value '${protocol}' for IP protocol. Unknown protocol.`,
      );
    }
    const proto = protocol === '6' ? 'tcp' : protocol === '17' ? 'udp' : protocol;
    const fromPort = Number(str(perm, 'FromPort') ?? -1);
    const toPort = Number(str(perm, 'ToPort') ?? -1);
    if (proto === 'tcp' || proto === 'udp') {
      if (!(fromPort >= 0 && toPort <= 65535 && fromPort <= toPort)) {
        throw clientError('InvalidParameterValue', `Invalid port range: ${fromPort}-${toPort}`);
      }
    }
    const v4 = records(perm, 'IpRanges').map((r) => str(r, 'CidrIp') ?? '');
    const v6 = records(perm, 'Ipv6Ranges').map((r) => str(r, 'CidrIpv6') ?? '');
    for (const cidr of [...v4, ...v6]) {
      if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(cidr)) {
        throw clientError('InvalidParameterValue', `CIDR block ${cidr} is malformed`);
      }
      out.push({ protocol: proto, fromPort, toPort, cidr });
    }
  }
  if (out.length === 0) {
    throw clientError('MissingParameter', 'The request must contain the parameter ipPermissions');
  }
  return out;
}

function describe(r: Omit<DoubleRule, 'ruleId'>): string {
  return `peer: ${r.cidr}, ${r.protocol.toUpperCase()}, from port: ${r.fromPort}, to port: ${r.toPort}, ALLOW`;
}

function createSecurityGroup(d: Ec2Double, p: Params): Record<string, Xml> {
  const name = str(p, 'GroupName') ?? '';
  const description = str(p, 'GroupDescription') ?? '';
  if (name === '')
    throw clientError('MissingParameter', 'The request must contain the parameter GroupName');
  if (description === '') {
    throw clientError(
      'MissingParameter',
      'The request must contain the parameter GroupDescription',
    );
  }
  if (name.length > 255 || name.toLowerCase().startsWith('sg-')) {
    throw clientError(
      'InvalidParameterValue',
      `Value (${name}) for parameter GroupName is invalid. Group names may not be in the format sg-*.`,
    );
  }
  if (name === 'default')
    throw clientError('InvalidGroup.Reserved', "The security group 'default' is reserved");
  const vpcId = str(p, 'VpcId');
  if (vpcId === undefined) {
    throw clientError(
      'VPCIdNotSpecified',
      'No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.',
    );
  }
  if (vpcId !== d.vpcId)
    throw clientError('InvalidVpcID.NotFound', `The vpc ID '${vpcId}' does not exist`);
  if ([...d.groups.values()].some((g) => g.vpcId === vpcId && g.groupName === name)) {
    throw clientError(
      'InvalidGroup.Duplicate',
      `The security group '${name}' already exists for VPC '${vpcId}'`,
    );
  }
  const tags = new Map<string, string>();
  for (const spec of records(p, 'TagSpecification')) {
    if (str(spec, 'ResourceType') !== 'security-group') {
      throw clientError(
        'InvalidParameterValue',
        `'${str(spec, 'ResourceType')}' is not a valid taggable resource type for this operation.`,
      );
    }
    for (const t of records(spec, 'Tag')) tags.set(str(t, 'Key') ?? '', str(t, 'Value') ?? '');
  }
  const g: DoubleGroup = {
    groupId: resourceId('sg'),
    groupName: name,
    description,
    vpcId,
    tags,
    ingress: [],
  };
  d.groups.set(g.groupId, g);
  return {
    return: true,
    groupId: g.groupId,
    tagSet: tags.size === 0 ? undefined : tagSet(tags),
    securityGroupArn: `arn:aws:ec2:${d.region}:${d.accountId}:security-group/${g.groupId}`,
  };
}

function passes(g: DoubleGroup, name: string, values: string[]): boolean {
  const tag = tagsMatch(g.tags, name, values);
  if (tag !== undefined) return tag;
  const field: Record<string, string> = {
    'group-name': g.groupName,
    'group-id': g.groupId,
    'vpc-id': g.vpcId,
    description: g.description,
    'owner-id': '',
  };
  if (!(name in field))
    throw clientError('InvalidParameterValue', `The filter '${name}' is invalid`);
  return values.some((x) => globMatch(x, field[name] as string));
}

function describeSecurityGroups(d: Ec2Double, p: Params): Record<string, Xml> {
  const ids = strings(p, 'GroupId');
  const names = strings(p, 'GroupName');
  let all = [...d.groups.values()];
  if (ids.length > 0) all = ids.map((id) => group(d, id));
  if (names.length > 0) {
    // A name names a group of the default VPC only; the double's VPC is not a default one.
    throw clientError(
      'InvalidGroup.NotFound',
      `The security group '${names[0]}' does not exist in default VPC 'none'`,
    );
  }
  const filters = filtersOf(p);
  all = all.filter((g) => [...filters].every(([n, v]) => passes(g, n, v)));
  const { items, next } = page(all, p, { min: 5, max: 1000 });
  return {
    securityGroupInfo: items.map((g) => groupXml(g, d.accountId, d.region)),
    nextToken: next,
  };
}

function authorizeIngress(d: Ec2Double, p: Params): Record<string, Xml> {
  const g = group(d, str(p, 'GroupId'));
  const rules = rulesOf(p);
  for (const r of rules) {
    const same = g.ingress.find(
      (x) =>
        x.protocol === r.protocol &&
        x.fromPort === r.fromPort &&
        x.toPort === r.toPort &&
        x.cidr === r.cidr,
    );
    if (same !== undefined || rules.filter((x) => describe(x) === describe(r)).length > 1) {
      throw clientError(
        'InvalidPermission.Duplicate',
        `the specified rule "${describe(r)}" already exists`,
      );
    }
  }
  const added = rules.map((r) => ({ ...r, ruleId: resourceId('sgr') }));
  g.ingress.push(...added);
  return {
    return: true,
    securityGroupRuleSet: added.map((r) => ({
      securityGroupRuleId: r.ruleId,
      groupId: g.groupId,
      groupOwnerId: d.accountId,
      isEgress: false,
      ipProtocol: r.protocol,
      fromPort: r.fromPort,
      toPort: r.toPort,
      ...(r.cidr.includes(':') ? { cidrIpv6: r.cidr } : { cidrIpv4: r.cidr }),
    })),
  };
}

function revokeIngress(d: Ec2Double, p: Params): Record<string, Xml> {
  const g = group(d, str(p, 'GroupId'));
  const rules = rulesOf(p);
  const at = rules.map((r) =>
    g.ingress.findIndex(
      (x) =>
        x.protocol === r.protocol &&
        x.fromPort === r.fromPort &&
        x.toPort === r.toPort &&
        x.cidr === r.cidr,
    ),
  );
  if (at.some((i) => i < 0)) {
    throw clientError(
      'InvalidPermission.NotFound',
      'The specified rule does not exist in this security group.',
    );
  }
  const drop = new Set(at);
  const kept = g.ingress.filter((_, i) => !drop.has(i));
  g.ingress.splice(0, g.ingress.length, ...kept);
  return { return: true };
}

function deleteSecurityGroup(d: Ec2Double, p: Params): Record<string, Xml> {
  const g = group(d, str(p, 'GroupId'));
  const users = [...d.instances.values()].filter(
    (i) => i.state !== 'terminated' && i.groupIds.includes(g.groupId),
  );
  if (users.length > 0) {
    throw clientError('DependencyViolation', `resource ${g.groupId} has a dependent object`);
  }
  d.groups.delete(g.groupId);
  return { return: true, groupId: g.groupId };
}

/** The security group actions. */
export const groupHandlers: Record<string, Handler> = {
  CreateSecurityGroup: createSecurityGroup,
  DescribeSecurityGroups: describeSecurityGroups,
  AuthorizeSecurityGroupIngress: authorizeIngress,
  RevokeSecurityGroupIngress: revokeIngress,
  DeleteSecurityGroup: deleteSecurityGroup,
};
