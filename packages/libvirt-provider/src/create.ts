/**
 * Create: adopt the domain an earlier attempt left (only when its mark
 * says it is this Proxy's), or check the pool's space, ensure the cached
 * image, the overlay and a fresh seed, define the domain with its mark and
 * start it.
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import { ErrorCode } from '@proxy-op/libvirt-rpc';
import { hasCode } from './classify.js';
import type { HostConfig, ImageEntry, MachineTypeEntry } from './config.js';
import { ensureRunning, lookupDomain, readMark } from './domain.js';
import { formatId } from './id.js';
import { ensureImage, type ImagePlan, runningPool } from './image.js';
import { checkDomain, type Runtime, signalOf } from './runtime.js';
import type { Domain, LibvirtSeam } from './seam.js';
import { ensureOverlay, writeSeed } from './volumes.js';
import { domainXml } from './xml.js';

const GIB = 1024 ** 3;

/** Placement resolved against the config. */
export interface Placement {
  readonly host: HostConfig;
  readonly machineTypeKey: string;
  readonly machineType: MachineTypeEntry;
  readonly imageKey: string;
  readonly image: ImageEntry;
}

/** Placement to host, machine type and image; Permanent naming the field when unknown. */
export function placementOf(
  rt: Runtime,
  r: CheckedCreateRequest,
  ctx: OperationContext,
): Placement {
  const c = rt.config;
  const t = rt.flavour.type;
  const names = c.hosts.map((h) => h.name);
  const zone = r.placement.zone;
  const hostName =
    names.length === 1 && (zone === undefined || zone === '')
      ? (names[0] as string)
      : requireOneOf(ctx.provider, 'placement.zone', zone, names, `${t}.hosts`);
  const machineTypeKey = requireOneOf(
    ctx.provider,
    'placement.machineType',
    r.placement.machineType,
    Object.keys(c.machineTypes),
    `${t}.machineTypes`,
  );
  const imageKey = requireOneOf(
    ctx.provider,
    'placement.image',
    r.placement.image,
    Object.keys(c.images),
    `${t}.images`,
  );
  return {
    host: c.hosts.find((h) => h.name === hostName) as HostConfig,
    machineTypeKey,
    machineType: c.machineTypes[machineTypeKey] as MachineTypeEntry,
    imageKey,
    image: c.images[imageKey] as ImageEntry,
  };
}

/** Creates or adopts the domain for `req`; resolves with its ID once it runs (or was started). */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const p = placementOf(rt, req, ctx);
  const host = p.host.name;
  const fields = { host, name: req.name };
  rt.log.trace(
    {
      ...fields,
      machineType: p.machineTypeKey,
      image: p.imageKey,
      installation: req.installation,
      cloudInitBytes: req.cloudInit.byteLength,
    },
    `${rt.flavour.prefix} create resolved`,
  );
  const signal = signalOf(ctx);
  const seam = await rt.hosts.pooled(p.host, ctx.signal);
  const id = formatId({ host, name: req.name });
  let dom = await lookupDomain(seam, req.name, signal);
  if (dom === undefined) {
    dom = await build(rt, ctx, seam, p, req);
  } else {
    await adopt(rt, ctx, seam, dom, req, host);
  }
  await ensureRunning(rt, ctx, seam, dom, host);
  rt.log.debug(
    { ...fields, cloudInitBytes: req.cloudInit.byteLength },
    `${rt.flavour.prefix} domain ensured running`,
  );
  return id;
}

/** Adopts `dom` when its mark says it is this request's; Permanent otherwise, naming it. */
async function adopt(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  dom: Domain,
  req: CheckedCreateRequest,
  host: string,
): Promise<void> {
  const mark = await readMark(rt, seam, dom, signalOf(ctx));
  const problem = adoptionProblem(mark, { uid: req.uid, installation: req.installation });
  if (problem !== undefined) {
    throw ctx.permanent(
      `domain ${req.name} on host ${host} exists but ${problem} (requested UID ${req.uid}); the operator never takes over a domain it did not create: rename or remove it`,
    );
  }
  rt.log.debug({ host, name: req.name }, `${rt.flavour.prefix} domain adopted`);
}

/** Everything a new domain needs, then the domain itself, defined with its mark. */
async function build(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  p: Placement,
  req: CheckedCreateRequest,
): Promise<Domain> {
  const signal = signalOf(ctx);
  const { pool, available } = await runningPool(rt, ctx, seam, p.host);
  const plan: ImagePlan = {
    host: p.host,
    pool,
    key: p.imageKey,
    image: p.image,
    diskBytes: rt.config.diskSizeGb * GIB,
    available,
  };
  const image = await ensureImage(rt, ctx, seam, plan);
  const diskBytes = Math.max(plan.diskBytes, image.capacity);
  const overlay = await ensureOverlay(rt, ctx, seam, plan, image, req.name, diskBytes);
  const seed = await writeSeed(rt, ctx, seam, pool, req);
  const xml = domainXml({
    name: req.name,
    domainType: p.host.domainType,
    vcpus: p.machineType.vcpus,
    memoryMiB: p.machineType.memoryMiB,
    firmware: p.image.firmware,
    metadata: rt.flavour.metadata.format({
      uid: req.uid,
      createdAt: rt.clock.now(),
      installation: req.installation,
    }),
    overlayPath: overlay.path,
    seedPath: seed.path,
    bridge: p.host.bridge,
    consoleLog: rt.config.consoleLog,
  });
  rt.log.trace({ host: p.host.name, name: req.name, xml }, `${rt.flavour.prefix} domain xml`);
  try {
    return checkDomain(await seam.domainDefineXml({ xml }, signal));
  } catch (err) {
    // Defined meanwhile, by an earlier attempt the daemon carried out late or
    // by another operator: the mark decides, as for any domain found by name.
    if (!hasCode(err, ErrorCode.ERR_OPERATION_FAILED, ErrorCode.ERR_DOM_EXIST)) throw err;
    const found = await lookupDomain(seam, req.name, signal);
    if (found === undefined) throw err;
    await adopt(rt, ctx, seam, found, req, p.host.name);
    return found;
  }
}
