/**
 * Finding a Proxy's instances by name, through EC2's eventual consistency:
 * a Describe call may not show an instance launched a moment ago, so an
 * instance this provider launched within `consistency.windowMs` and missing
 * from the answer is asked for by its ID, and waited for up to
 * `consistency.waitMs`, before an operation answers Transient (never
 * NotFound) for it.
 *
 * @module
 */
import type { OperationContext } from '@proxy-op/contract';
import { Ec2ApiError } from './errors.js';
import type { RecentLaunch, Runtime } from './runtime.js';
import type { InstanceView } from './seam.js';
import { isLive } from './state.js';
import { NAME_TAG, nameFilter, readMark } from './tags.js';

/** Newest launch first. */
export function newestFirst(views: readonly InstanceView[]): InstanceView[] {
  return [...views].sort((a, b) => b.launchTime.getTime() - a.launchTime.getTime());
}

/** The launch of `name` still inside the consistency window, if any. */
export function recentLaunch(rt: Runtime, name: string): RecentLaunch | undefined {
  const r = rt.recent.get(name);
  if (r === undefined) return undefined;
  if (Date.now() - r.at >= rt.config.consistency.windowMs) {
    rt.recent.delete(name);
    return undefined;
  }
  return r;
}

/**
 * The instance `instanceId`, asked for by ID until EC2 shows it or
 * `consistency.waitMs` has passed (then undefined).
 */
export async function awaitVisible(
  rt: Runtime,
  instanceId: string,
  ctx: OperationContext,
): Promise<InstanceView | undefined> {
  const until = Date.now() + rt.config.consistency.waitMs;
  let pause = 100;
  for (;;) {
    try {
      const [v] = await rt.seam.describeInstances({ instanceIds: [instanceId] }, ctx.signal);
      if (v !== undefined) return v;
    } catch (err) {
      if (!(Ec2ApiError.isInstance(err) && err.ec2Code === 'InvalidInstanceID.NotFound')) throw err;
    }
    if (Date.now() + pause > until) return undefined;
    await ctx.sleep(pause);
    pause = Math.min(pause * 2, 1000);
  }
}

/**
 * Every instance named `name` EC2 shows (terminated ones too, while it
 * lists them), newest first, with this provider's recent launch of that
 * name when the answer left it out; Transient when that launch is not
 * visible yet.
 */
export async function findInstances(
  rt: Runtime,
  name: string,
  ctx: OperationContext,
): Promise<InstanceView[]> {
  const views = await rt.seam.describeInstances({ filters: [nameFilter(name)] }, ctx.signal);
  const recent = recentLaunch(rt, name);
  // Listed by the filter: EC2's consistency has caught up with it.
  if (recent !== undefined && views.some((v) => v.instanceId === recent.instanceId)) {
    rt.recent.delete(name);
  } else if (recent !== undefined) {
    const v = await awaitVisible(rt, recent.instanceId, ctx);
    if (v === undefined) {
      throw ctx.transient(
        `instance ${name} (${recent.instanceId}) was launched ${Math.round((Date.now() - recent.at) / 1000)} s ago and EC2 does not show it yet; try again`,
      );
    }
    // Renamed since: no longer an instance of this name.
    if (v.tags[NAME_TAG] === name) views.push(v);
    else rt.recent.delete(name);
  }
  return newestFirst(views);
}

/**
 * The instance that stands for the name: the newest live one carrying a
 * mark, else the newest live one, else the newest marked one that ended,
 * else the newest one.
 */
export function current(views: readonly InstanceView[]): InstanceView | undefined {
  const marked = (v: InstanceView) => readMark(v.tags) !== undefined;
  const live = views.filter(isLive);
  return live.find(marked) ?? live[0] ?? views.find(marked) ?? views[0];
}
