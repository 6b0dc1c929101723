/**
 * Create: placement, cloud-init and sources checked before any call; then
 * the instances of the name read (a live one adopted when it is ours,
 * refused when it is not); then the security group made or brought up to
 * date; then one RunInstances with the subnet, the group, the user data,
 * the tags (instance, volume, network interface, Spot request) and IMDSv2
 * only, and a client token derived from the Proxy's UID and name, so a
 * repeated Create gets the same instance. Create returns once EC2 accepted
 * the launch (profile `createReturn: submit`); a launch EC2 gives up later
 * is reported by Get.
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  cidrProblem,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import type { AwsConfig } from './config.js';
import { Ec2ApiError } from './errors.js';
import { ensureGroup } from './group.js';
import { formatId } from './id.js';
import { current, findInstances, newestFirst } from './lookup.js';
import type { Runtime } from './runtime.js';
import type { InstanceView, RunSpec } from './seam.js';
import { isLive } from './state.js';
import { clientToken, generationOf, markTags, readMark } from './tags.js';

/** The most user data EC2 takes (before base64). */
export const MAX_USER_DATA_BYTES = 16 * 1024;

/** How many launches of one name a Create walks past (each one terminated). */
const MAX_GENERATIONS = 64;

/** Where an instance goes and what it runs, resolved from the placement. */
export interface ResolvedPlacement {
  readonly zone: string;
  readonly subnetId: string;
  readonly instanceType: string;
  /** The catalogue key and the AMI it names. */
  readonly imageKey: string;
  readonly imageId: string;
}

/**
 * The placement: `zone` one of the zones of `aws.subnets` (required with
 * more than one, the only one otherwise); `region`, when given, the
 * configured region; `machineType` one of `aws.instanceTypes`; `image` a
 * key of `aws.images`. Each refusal is Permanent and names the request
 * field.
 */
export function resolvePlacement(
  config: AwsConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): ResolvedPlacement {
  const p = req.placement;
  const zones = Object.keys(config.subnets);
  if (p.region !== undefined && p.region !== '' && p.region !== config.region) {
    throw ctx.permanent(
      `placement.region "${p.region}" is not the region of this provider (aws.region is ${config.region})`,
    );
  }
  const zone =
    zones.length === 1 && (p.zone === undefined || p.zone === '')
      ? (zones[0] as string)
      : requireOneOf(ctx.provider, 'placement.zone', p.zone, zones, 'aws.subnets');
  const instanceType = requireOneOf(
    ctx.provider,
    'placement.machineType',
    p.machineType,
    config.instanceTypes,
    'aws.instanceTypes',
  );
  const imageKey = requireOneOf(
    ctx.provider,
    'placement.image',
    p.image,
    Object.keys(config.images),
    'aws.images',
  );
  return {
    zone,
    subnetId: config.subnets[zone] as string,
    instanceType,
    imageKey,
    imageId: config.images[imageKey] as string,
  };
}

/**
 * The sources the proxy port is opened to: the request's `allowedSources`
 * (a bare address as a /32 or /128), else `aws.securityGroup.sourceRanges`;
 * none is Permanent.
 */
export function sourcesOf(
  config: AwsConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): string[] {
  const given = req.allowedSources ?? config.securityGroup.sourceRanges;
  const out = new Set<string>();
  for (const [i, s] of given.entries()) {
    const problem = cidrProblem(s);
    if (problem !== undefined) throw ctx.permanent(`allowedSources[${i}]: ${problem}`);
    out.add(s.includes('/') ? s : `${s}/${s.includes(':') ? 128 : 32}`);
  }
  if (out.size === 0) {
    throw ctx.permanent(
      'no allowed source: the request names no allowedSources and aws.securityGroup.sourceRanges is empty, and a proxy port is never opened to everyone by default',
    );
  }
  return [...out];
}

/** The cloud-init document as user data: base64 of at most 16 KiB. Never logged. */
function userDataOf(req: CheckedCreateRequest, ctx: OperationContext): string {
  if (req.cloudInit.byteLength > MAX_USER_DATA_BYTES) {
    throw ctx.permanent(
      `cloudInit is ${req.cloudInit.byteLength} bytes; EC2 user data holds at most ${MAX_USER_DATA_BYTES}`,
    );
  }
  return Buffer.from(req.cloudInit).toString('base64');
}

/** The first launch generation not used yet, as far as the instances EC2 still lists tell. */
function nextGeneration(views: readonly InstanceView[], req: CheckedCreateRequest): number {
  let next = 0;
  for (const v of views) {
    const g = generationOf(v.clientToken, req.uid, req.name);
    if (g !== undefined) next = Math.max(next, g + 1);
  }
  return next;
}

/** Creates or adopts the instance; resolves with its ID once EC2 accepted the launch. */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const placement = resolvePlacement(rt.config, req, ctx);
  const userData = userDataOf(req, ctx);
  const sources = sourcesOf(rt.config, req, ctx);
  const id = formatId({ region: rt.config.region, name: req.name });
  rt.log.trace(
    { name: req.name, ...placement, cloudInitBytes: req.cloudInit.byteLength, sources },
    'aws create resolved',
  );

  const views = await findInstances(rt, req.name, ctx);
  const running = views.filter((v) => isLive(v) && v.state !== 'shutting-down');
  const existing = current(running);
  if (existing !== undefined) {
    const problem = adoptionProblem(readMark(existing.tags), req);
    if (problem !== undefined) {
      throw ctx.permanent(
        `an instance named ${req.name} (${existing.instanceId}) exists in ${rt.config.region} and ${problem}; delete it or rename the Proxy`,
      );
    }
    return id;
  }

  const group = await ensureGroup(rt, req, sources, ctx);
  const mark = { uid: req.uid, installation: req.installation, createdAt: new Date() };
  const spec = (generation: number): RunSpec => ({
    name: req.name,
    imageId: placement.imageId,
    instanceType: placement.instanceType,
    subnetId: placement.subnetId,
    groupIds: [group.groupId, ...rt.config.securityGroup.extraGroupIds],
    associatePublicIp: rt.config.addressMode === 'public',
    ipv6: rt.config.ipv6,
    userData,
    clientToken: clientToken(req.uid, req.name, generation),
    tags: markTags(req.name, mark),
    spot: rt.config.market === 'spot' ? { maxPrice: rt.config.spotMaxPrice } : undefined,
  });
  const first = nextGeneration(views, req);
  for (let g = first; g < first + MAX_GENERATIONS; g++) {
    let inst: InstanceView;
    try {
      forgetOldLaunches(rt);
      rt.launches.set(spec(g).clientToken, Date.now());
      inst = await rt.seam.runInstance(spec(g), ctx.signal);
    } catch (err) {
      // The token's instance is gone: spent.
      if (Ec2ApiError.isInstance(err) && err.ec2Code === 'IdempotentInstanceTerminated') continue;
      const token = spec(g).clientToken;
      if (Ec2ApiError.isInstance(err) && err.ec2Code === 'IdempotentParameterMismatch') {
        // The token launched with other arguments. An attempt of this provider a moment ago
        // (its creation time a second older) is this Create's launch, which EC2 may not show
        // yet; any other launch with it is an earlier instance's: spent.
        if (!launchedRecently(rt, token)) continue;
        inst = await launchedWith(rt, token, req.name, ctx);
      } else {
        if (group.created) await undoGroup(rt, group.groupId, err, ctx);
        throw refusal(err, placement, ctx);
      }
    }
    if (!isLive(inst) || inst.state === 'shutting-down') continue;
    rt.recent.set(req.name, { instanceId: inst.instanceId, at: Date.now() });
    rt.log.debug(
      { name: req.name, instanceId: inst.instanceId, generation: g },
      'aws launch accepted',
    );
    return id;
  }
  throw ctx.transient(
    `instance ${req.name}: ${MAX_GENERATIONS} launches in a row answered with an instance that has ended; try again`,
  );
}

/** Whether this provider sent a launch with `token` within `consistency.windowMs`. */
function launchedRecently(rt: Runtime, token: string): boolean {
  forgetOldLaunches(rt);
  return rt.launches.has(token);
}

/** Forgets the launches older than `consistency.windowMs`, so neither record grows without bound. */
function forgetOldLaunches(rt: Runtime): void {
  const since = Date.now() - rt.config.consistency.windowMs;
  for (const [token, at] of rt.launches) if (at <= since) rt.launches.delete(token);
  for (const [name, r] of rt.recent) if (r.at <= since) rt.recent.delete(name);
}

/**
 * The instance an earlier launch made with `token`, asked for by the token
 * until EC2 shows it (`consistency.waitMs`); Transient when it does not.
 */
async function launchedWith(
  rt: Runtime,
  token: string,
  name: string,
  ctx: OperationContext,
): Promise<InstanceView> {
  const until = Date.now() + rt.config.consistency.waitMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 1000)) {
    const filters = [{ name: 'client-token', values: [token] }];
    const [v] = newestFirst(await rt.seam.describeInstances({ filters }, ctx.signal));
    if (v !== undefined) return v;
    if (Date.now() + pause > until) {
      throw ctx.transient(
        `instance ${name}: an earlier launch with client token ${token} is not visible yet; try again`,
      );
    }
    await ctx.sleep(pause);
  }
}

/**
 * Deletes the group this Create made when EC2 refused the launch outright
 * (an answer with a status), so a refused Create leaves nothing; a launch
 * that may have happened (no answer) keeps it.
 */
async function undoGroup(
  rt: Runtime,
  groupId: string,
  err: unknown,
  ctx: OperationContext,
): Promise<void> {
  if (!(Ec2ApiError.isInstance(err) && err.httpStatus !== undefined) || ctx.signal?.aborted) return;
  try {
    await rt.seam.deleteSecurityGroup(groupId, ctx.signal);
  } catch (undo) {
    rt.log.debug(
      { groupId, error: (undo as Error).name },
      'aws security group of a refused launch left behind',
    );
  }
}

/** A launch refused for a value of the placement: Permanent, naming the request field and the config key. */
function refusal(err: unknown, p: ResolvedPlacement, ctx: OperationContext): unknown {
  if (!Ec2ApiError.isInstance(err)) return err;
  if (err.ec2Code.startsWith('InvalidAMIID.')) {
    return ctx.permanent(
      `placement.image "${p.imageKey}": aws.images.${p.imageKey} is ${p.imageId}, which EC2 refuses: ${err.message}`,
      err,
    );
  }
  if (err.ec2Code.startsWith('InvalidSubnetID.')) {
    return ctx.permanent(
      `placement.zone "${p.zone}": aws.subnets.${p.zone} is ${p.subnetId}, which EC2 refuses: ${err.message}`,
      err,
    );
  }
  return err;
}
