/**
 * The security group of a Proxy's instance: `proxy-op-<name>` in the
 * configured VPC, opening the proxy port (TCP) to the allowed sources only,
 * tagged with the mark in the call that makes it. It outlives the instance
 * only until the instance is terminated (EC2 keeps a group in use until
 * then): the operation that first sees the instance terminated after a
 * Delete removes it, and while it is there it records that the instance's
 * end has not been collected yet (a Spot Instance taken back reads as
 * Preempted until Delete removes its group).
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type DeleteContext,
  deletionProblem,
  formatMarkTime,
  type Mark,
  MarkKey,
  type OperationContext,
} from '@proxy-op/contract';
import { Ec2ApiError } from './errors.js';
import type { Runtime } from './runtime.js';
import type { GroupView, RuleView } from './seam.js';
import { groupNameOf, markTags, readMark } from './tags.js';

/** The group of instance `name` in the configured VPC, if there is one. */
export async function findGroup(
  rt: Runtime,
  name: string,
  ctx: OperationContext,
): Promise<GroupView | undefined> {
  const groups = await rt.seam.describeSecurityGroups(
    [
      { name: 'group-name', values: [groupNameOf(name)] },
      { name: 'vpc-id', values: [rt.config.vpcId] },
    ],
    ctx.signal,
  );
  return groups[0];
}

/** The rules a proxy on `port` needs: TCP on that port from each source. */
export function wantedRules(port: number, sources: readonly string[]): RuleView[] {
  return sources.map((cidr) => ({ protocol: 'tcp', fromPort: port, toPort: port, cidr }));
}

const sameRule = (a: RuleView, b: RuleView) =>
  a.protocol === b.protocol &&
  a.fromPort === b.fromPort &&
  a.toPort === b.toPort &&
  a.cidr === b.cidr;

/**
 * The group for a Create: made (tagged, then its rules authorized) when
 * there is none; when there is one, refused unless proxy-op made it for
 * this installation, handed to this Proxy when another Proxy of the same
 * name left it behind (no instance of that name runs: Create checked), and
 * its rules set to exactly the wanted ones. `created` says whether this
 * call made it.
 */
export async function ensureGroup(
  rt: Runtime,
  req: CheckedCreateRequest,
  sources: readonly string[],
  ctx: OperationContext,
): Promise<{ groupId: string; created: boolean }> {
  const wanted = wantedRules(req.port, sources);
  const existing = await findGroup(rt, req.name, ctx);
  if (existing === undefined) {
    const mark: Mark = { uid: req.uid, installation: req.installation, createdAt: new Date() };
    let groupId: string;
    try {
      groupId = await rt.seam.createSecurityGroup(
        {
          groupName: groupNameOf(req.name),
          description: `proxy-op: the proxy port of instance ${req.name}`,
          vpcId: rt.config.vpcId,
          tags: markTags(req.name, mark),
        },
        ctx.signal,
      );
    } catch (err) {
      if (Ec2ApiError.isInstance(err) && err.ec2Code === 'InvalidGroup.Duplicate') {
        throw ctx.transient(
          `security group ${groupNameOf(req.name)} is being made by another call; try again`,
          err,
        );
      }
      throw err;
    }
    await authorize(rt, groupId, wanted, ctx);
    return { groupId, created: true };
  }
  const mark = readMark(existing.tags);
  const problem =
    mark === undefined
      ? 'is not managed by proxy-op'
      : mark.installation !== req.installation
        ? `belongs to installation "${mark.installation}"`
        : undefined;
  if (problem !== undefined) {
    throw ctx.permanent(
      `security group ${existing.groupName} (${existing.groupId}) exists in VPC ${rt.config.vpcId} and ${problem}; delete it or rename the Proxy`,
    );
  }
  if (adoptionProblem(mark, req) !== undefined) {
    rt.log.debug(
      { name: req.name, groupId: existing.groupId },
      'aws security group of an earlier Proxy taken over',
    );
    await rt.seam.createTags(
      [existing.groupId],
      { [MarkKey.Uid]: req.uid, [MarkKey.CreatedAt]: formatMarkTime(new Date()) },
      ctx.signal,
    );
  }
  const extra = existing.ingress.filter((r) => !wanted.some((w) => sameRule(w, r)));
  const missing = wanted.filter((w) => !existing.ingress.some((r) => sameRule(w, r)));
  if (extra.length > 0) await rt.seam.revokeIngress(existing.groupId, extra, ctx.signal);
  if (missing.length > 0) await authorize(rt, existing.groupId, missing, ctx);
  return { groupId: existing.groupId, created: false };
}

async function authorize(
  rt: Runtime,
  groupId: string,
  rules: readonly RuleView[],
  ctx: OperationContext,
): Promise<void> {
  try {
    await rt.seam.authorizeIngress(groupId, rules, ctx.signal);
  } catch (err) {
    // Another call (or an earlier attempt the caller gave up on) authorized it first.
    if (Ec2ApiError.isInstance(err) && err.ec2Code === 'InvalidPermission.Duplicate') return;
    throw err;
  }
}

/**
 * Deletes the group when its mark says it is the caller's (`owner`); true
 * when it is gone. A group still in use (EC2 releases it a moment after the
 * instance is terminated) is left for a later call: false.
 */
export async function removeGroup(
  rt: Runtime,
  group: GroupView,
  owner: DeleteContext['owner'],
  ctx: OperationContext,
): Promise<boolean> {
  const problem = deletionProblem(readMark(group.tags), owner);
  if (problem !== undefined) {
    rt.log.debug(
      { groupId: group.groupId, problem },
      'aws security group not the caller’s; left alone',
    );
    return true;
  }
  try {
    await rt.seam.deleteSecurityGroup(group.groupId, ctx.signal);
  } catch (err) {
    if (Ec2ApiError.isInstance(err) && err.ec2Code === 'InvalidGroup.NotFound') return true;
    if (Ec2ApiError.isInstance(err) && err.ec2Code === 'DependencyViolation') {
      rt.log.debug(
        { groupId: group.groupId },
        'aws security group still in use; left for a later call',
      );
      return false;
    }
    throw err;
  }
  return true;
}
