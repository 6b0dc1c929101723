/**
 * Create: placement and request checked before any call; then the server
 * read by name (adopted when it is ours, refused when it is not), or its
 * firewall made and the server created with the firewall, the mark as
 * labels and the cloud-init as `user_data`, all in one request. Create
 * returns once the API accepted the server (profile `createReturn:
 * submit`); Get reads how it goes from there.
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import type { ServerView } from './answers.js';
import { type HetznerConfig, locationOfDatacenter } from './config.js';
import { HetznerApiError } from './errors.js';
import { ensureFirewall, firewallSources } from './firewall.js';
import { formatId } from './id.js';
import { labelValueProblem, markLabels, readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import type { ServerBody } from './seam.js';

/** The most `user_data` may hold: 32 KiB. */
export const MAX_USER_DATA_BYTES = 32 * 1024;

/** Where a server goes and what it runs, resolved from the placement. */
export interface ResolvedPlacement {
  /** The location (`fsn1`). */
  readonly location: string;
  /** The datacenter, when the placement named one (`fsn1-dc14`). */
  readonly datacenter: string | undefined;
  readonly serverType: string;
  /** The image name or ID from the catalogue. */
  readonly image: string;
}

/**
 * The placement: `region` one of `hetzner.locations` (required with more
 * than one, unless `zone` names a datacenter); `zone`, when given, a
 * datacenter (`fsn1-dc14`) of a configured location, which `region` must
 * then hold; `machineType` one of `hetzner.serverTypes`; `image` a key of
 * `hetzner.images`. Each refusal is Permanent and names the request field.
 */
export function resolvePlacement(
  config: HetznerConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): ResolvedPlacement {
  const p = req.placement;
  const set = (v: string | undefined): v is string => v !== undefined && v !== '';
  let datacenter: string | undefined;
  let location: string;
  if (set(p.zone)) {
    const of = locationOfDatacenter(p.zone);
    if (of === undefined || !config.locations.includes(of)) {
      throw ctx.permanent(
        `placement.zone "${p.zone}" is not a datacenter of a location in hetzner.locations (${config.locations.join(', ')}); name one like ${config.locations[0]}-dc1, or leave it out`,
      );
    }
    if (set(p.region) && p.region !== of) {
      throw ctx.permanent(
        `placement.region "${p.region}" does not hold placement.zone "${p.zone}" (its location is ${of})`,
      );
    }
    datacenter = p.zone;
    location = of;
  } else if (set(p.region) || config.locations.length > 1) {
    location = requireOneOf(
      ctx.provider,
      'placement.region',
      p.region,
      config.locations,
      'hetzner.locations',
    );
  } else {
    location = config.locations[0] as string;
  }
  const serverType = requireOneOf(
    ctx.provider,
    'placement.machineType',
    p.machineType,
    config.serverTypes,
    'hetzner.serverTypes',
  );
  const key = requireOneOf(
    ctx.provider,
    'placement.image',
    p.image,
    Object.keys(config.images),
    'hetzner.images',
  );
  return { location, datacenter, serverType, image: config.images[key] as string };
}

/** Creates or adopts the server; resolves with its ID once the API accepted it. */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const placement = resolvePlacement(rt.config, req, ctx);
  const uidProblem = labelValueProblem(req.uid);
  if (uidProblem !== undefined) throw ctx.permanent(`uid ${uidProblem}`);
  const userData = userDataOf(req, ctx);
  const sources = firewallSources(rt.config, req, ctx);
  rt.log.trace(
    {
      name: req.name,
      location: placement.location,
      datacenter: placement.datacenter,
      serverType: placement.serverType,
      image: placement.image,
      cloudInitBytes: req.cloudInit.byteLength,
      sources,
    },
    'hetzner create resolved',
  );

  const existing = await rt.seam.findServer(req.name, ctx.signal);
  if (existing !== undefined) {
    adopt(existing, req, ctx);
    return formatId({ name: req.name });
  }
  const firewall = sources === undefined ? undefined : await ensureFirewall(rt, req, sources, ctx);
  const body: ServerBody = {
    name: req.name,
    server_type: placement.serverType,
    image: /^\d+$/.test(placement.image) ? Number(placement.image) : placement.image,
    ...(placement.datacenter === undefined
      ? { location: placement.location }
      : { datacenter: placement.datacenter }),
    user_data: userData,
    labels: markLabels({ uid: req.uid, installation: req.installation }),
    start_after_create: true,
    public_net: { enable_ipv4: true, enable_ipv6: true },
    ...(firewall === undefined ? {} : { firewalls: [{ firewall: firewall.id }] }),
    ...(rt.config.sshKeys.length === 0
      ? {}
      : { ssh_keys: rt.config.sshKeys.map((k) => (/^\d+$/.test(k) ? Number(k) : k)) }),
  };
  try {
    const made = await rt.seam.createServer(body, ctx.signal);
    rt.log.debug(
      { name: req.name, serverId: made.server.id, action: made.action.id },
      'hetzner create accepted',
    );
  } catch (err) {
    if (HetznerApiError.isInstance(err) && err.apiCode === 'uniqueness_error') {
      // Another Create (or a cancelled one the API still carried out) made it first.
      const raced = await rt.seam.findServer(req.name, ctx.signal);
      if (raced === undefined)
        throw ctx.transient(`server ${req.name} exists and vanished; try again`);
      adopt(raced, req, ctx);
      return formatId({ name: req.name });
    }
    // The API refused the server: its firewall would be left with nothing to guard.
    if (firewall !== undefined && HetznerApiError.isInstance(err) && !ctx.signal?.aborted) {
      await rt.seam.deleteFirewall(firewall.id, ctx.signal).catch((e: unknown) => {
        rt.log.debug(
          { firewallId: firewall.id, error: (e as Error).name },
          'hetzner firewall left',
        );
      });
    }
    throw err;
  }
  return formatId({ name: req.name });
}

/** Adopts our own server (same or empty UID, same installation); refuses anyone else's. */
function adopt(server: ServerView, req: CheckedCreateRequest, ctx: OperationContext): void {
  const problem = adoptionProblem(readMark(server.labels, server.created), req);
  if (problem !== undefined) {
    throw ctx.permanent(
      `a server named ${req.name} exists in ${server.datacenter} and ${problem}; delete it or rename the Proxy`,
    );
  }
}

/** The cloud-init document as `user_data` text: UTF-8, at most 32 KiB. Never logged. */
function userDataOf(req: CheckedCreateRequest, ctx: OperationContext): string {
  if (req.cloudInit.byteLength > MAX_USER_DATA_BYTES) {
    throw ctx.permanent(
      `cloudInit is ${req.cloudInit.byteLength} bytes; Hetzner Cloud's user_data holds at most ${MAX_USER_DATA_BYTES}`,
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(req.cloudInit);
  } catch {
    throw ctx.permanent('cloudInit is not UTF-8 text; Hetzner Cloud user_data holds text only');
  }
}
