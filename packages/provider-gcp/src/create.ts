/**
 * Create: placement and request checked before any call, then the instance
 * read (adopted when it is ours, refused when it is not), or inserted; then
 * the opt-in firewall rule. Create returns once the API accepted the
 * insert (profile `createReturn: submit`); an insert that the API answers
 * with an operation already failed (a quota) is that failure. A failure
 * after acceptance is reported by Get.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import type { InstanceView } from './answers.js';
import { buildFirewallBody, buildInsertBody, firewallMark, firewallName } from './build.js';
import { type GcpConfig, NAME_RE, regionOf } from './config.js';
import { ComputeApiError, OperationFailedError } from './errors.js';
import { insertFailure } from './get.js';
import { formatId, type GcpId } from './id.js';
import { labelValueProblem, readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import { USER_DATA_KEY } from './seam.js';

/** The most a metadata value may hold (256 KiB). */
export const MAX_USER_DATA_BYTES = 256 * 1024;

/** Where an instance goes and what it runs, resolved from the placement. */
export interface ResolvedPlacement {
  readonly zone: string;
  readonly machineType: string;
  /** The image path from the catalogue. */
  readonly image: string;
}

/**
 * The placement: `zone` one of `gcp.zones` (required with more than one
 * zone, unless `region` picks the first configured zone of that region);
 * `region`, when given, must hold the zone; `machineType` one of
 * `gcp.machineTypes`; `image` a key of `gcp.images`. Each refusal is
 * Permanent and names the request field.
 */
export function resolvePlacement(
  config: GcpConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): ResolvedPlacement {
  const p = req.placement;
  const set = (v: string | undefined) => v !== undefined && v !== '';
  let zone: string;
  if (set(p.zone)) {
    zone = requireOneOf(ctx.provider, 'placement.zone', p.zone, config.zones, 'gcp.zones');
  } else if (set(p.region)) {
    const inRegion = config.zones.filter((z) => regionOf(z) === p.region);
    const regions = [...new Set(config.zones.map(regionOf))];
    if (inRegion.length === 0) {
      throw ctx.permanent(
        `placement.region "${p.region}" has no zone in gcp.zones; use one of ${regions.join(', ')}`,
      );
    }
    zone = inRegion[0] as string;
  } else if (config.zones.length === 1) {
    zone = config.zones[0] as string;
  } else {
    zone = requireOneOf(ctx.provider, 'placement.zone', p.zone, config.zones, 'gcp.zones');
  }
  if (set(p.region) && regionOf(zone) !== p.region) {
    throw ctx.permanent(
      `placement.region "${p.region}" does not hold placement.zone "${zone}" (its region is ${regionOf(zone)})`,
    );
  }
  const machineType = requireOneOf(
    ctx.provider,
    'placement.machineType',
    p.machineType,
    config.machineTypes,
    'gcp.machineTypes',
  );
  const key = requireOneOf(
    ctx.provider,
    'placement.image',
    p.image,
    Object.keys(config.images),
    'gcp.images',
  );
  return { zone, machineType, image: config.images[key] as string };
}

/** Creates or adopts the instance; resolves with its ID once the API accepted it. */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const placement = resolvePlacement(rt.config, req, ctx);
  if (!NAME_RE.test(req.name)) {
    throw ctx.permanent(
      `name "${req.name}" is not a Compute Engine instance name (it must start with a lowercase letter)`,
    );
  }
  const uidProblem = labelValueProblem(req.uid);
  if (uidProblem !== undefined) throw ctx.permanent(`uid ${uidProblem}`);
  const userData = userDataOf(req, ctx);
  const sources = firewallSources(rt.config, req, ctx);
  const id: GcpId = { zone: placement.zone, name: req.name };
  const owner = { uid: req.uid, installation: req.installation };
  rt.log.trace(
    {
      name: req.name,
      zone: placement.zone,
      machineType: placement.machineType,
      image: placement.image,
      cloudInitBytes: req.cloudInit.byteLength,
      sources,
    },
    'gcp create resolved',
  );

  const existing = await rt.seam.getInstance(id.zone, id.name, ctx.signal);
  if (existing !== undefined) {
    adopt(existing, req, ctx);
  } else {
    const body = buildInsertBody(rt.config, {
      id,
      ...owner,
      machineType: placement.machineType,
      image: placement.image,
      userData,
      firewallTag: sources === undefined ? undefined : firewallName(id),
    });
    try {
      const op = await rt.seam.insertInstance(id.zone, body, ctx.signal);
      if (op.status === 'DONE' && op.errors.length > 0) throw insertFailure(id, op, ctx);
      rt.log.debug({ name: id.name, zone: id.zone, operation: op.name }, 'gcp insert accepted');
    } catch (err) {
      if (!(ComputeApiError.isInstance(err) && err.httpStatus === 409)) throw err;
      // Another Create (or a cancelled one the API still carried out) made it first.
      const raced = await rt.seam.getInstance(id.zone, id.name, ctx.signal);
      if (raced === undefined)
        throw ctx.transient(`instance ${id.name} exists and vanished; try again`);
      adopt(raced, req, ctx);
    }
  }
  if (sources !== undefined) await ensureFirewall(rt, id, owner, req.port, sources, ctx);
  return formatId(id);
}

/** Adopts our own instance (same or empty UID, same installation); refuses anyone else's. */
function adopt(inst: InstanceView, req: CheckedCreateRequest, ctx: OperationContext): void {
  const problem = adoptionProblem(readMark(inst.labels, inst.creationTimestamp), req);
  if (problem !== undefined) {
    throw ctx.permanent(
      `an instance named ${req.name} exists in zone ${inst.zone} and ${problem}; delete it or rename the Proxy`,
    );
  }
}

/** The cloud-init document as metadata text: UTF-8, at most 256 KiB. Never logged. */
function userDataOf(req: CheckedCreateRequest, ctx: OperationContext): string {
  if (req.cloudInit.byteLength > MAX_USER_DATA_BYTES) {
    throw ctx.permanent(
      `cloudInit is ${req.cloudInit.byteLength} bytes; Compute Engine metadata (${USER_DATA_KEY}) holds at most ${MAX_USER_DATA_BYTES}`,
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(req.cloudInit);
  } catch {
    throw ctx.permanent('cloudInit is not UTF-8 text; Compute Engine metadata holds text only');
  }
}

/**
 * The rule's sources when the rule is on: the request's IPv4 sources (a bare
 * address as a /32; IPv6 sources cannot reach the instance's IPv4 address
 * and a rule cannot mix the families), else the config's; none is
 * Permanent.
 */
function firewallSources(
  config: GcpConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): string[] | undefined {
  if (!config.firewall.enabled) return undefined;
  const sources =
    req.allowedSources === undefined
      ? [...config.firewall.sourceRanges]
      : [
          ...new Set(
            req.allowedSources
              .filter((s) => isIPv4(s.split('/')[0] ?? ''))
              .map((s) => (s.includes('/') ? s : `${s}/32`)),
          ),
        ];
  if (sources.length === 0) {
    throw ctx.permanent(
      'gcp.firewall is on but neither the request (allowedSources, IPv4) nor gcp.firewall.sourceRanges names an allowed source',
    );
  }
  return sources;
}

/**
 * Inserts the instance's rule; a rule already there is kept when it is ours
 * and the same, refused when it is someone else's, and removed (Transient,
 * so the next attempt makes it afresh) when it is ours with other sources
 * or another port.
 */
async function ensureFirewall(
  rt: Runtime,
  id: GcpId,
  owner: { uid: string; installation: string },
  port: number,
  sources: readonly string[],
  ctx: OperationContext,
): Promise<void> {
  const body = buildFirewallBody(rt.config, id, owner, port, sources);
  try {
    const op = await rt.seam.insertFirewall(body, ctx.signal);
    if (op.status === 'DONE' && op.errors.length > 0) {
      throw new OperationFailedError(`the insert of firewall rule ${body.name}`, op);
    }
    return;
  } catch (err) {
    if (!(ComputeApiError.isInstance(err) && err.httpStatus === 409)) throw err;
  }
  const rule = await rt.seam.getFirewall(body.name, ctx.signal);
  if (rule === undefined)
    throw ctx.transient(`firewall rule ${body.name} exists and vanished; try again`);
  const problem = adoptionProblem(firewallMark(rule.description), owner);
  if (problem !== undefined) {
    throw ctx.permanent(`firewall rule ${body.name} for instance ${id.name} exists and ${problem}`);
  }
  const same =
    rule.sourceRanges.length === sources.length &&
    rule.sourceRanges.every((s) => sources.includes(s)) &&
    rule.targetTags.includes(body.name) &&
    rule.ports.includes(String(port));
  if (!same) {
    await rt.seam.deleteFirewall(body.name, ctx.signal);
    throw ctx.transient(
      `firewall rule ${body.name} of instance ${id.name} has other sources or another port; it is being replaced, try again`,
    );
  }
}
