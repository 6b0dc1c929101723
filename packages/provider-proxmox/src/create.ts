/**
 * Create: find the VM by name and adopt it, or check the template, allocate
 * a VMID from the UID and clone; then provision it (`provision.ts`).
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import { isConfigExists, isDoesNotExist } from './classify.js';
import type { MachineTypeEntry, TemplateEntry } from './config.js';
import { bootDisk, cloudInitDrives, diskSizeBytes } from './disk.js';
import { formatId } from './id.js';
import { formatDescription, parseDescription } from './mark.js';
import { type OurVm, type Plan, provision } from './provision.js';
import { isTaskLock, type Runtime } from './runtime.js';
import type { ResourceEntry, VmConfig } from './seam.js';
import { waitTask } from './tasks.js';
import { MAX_PROBES, vmidFor } from './vmid.js';

type Ownership = { readonly kind: 'ours'; readonly vm: OurVm } | { readonly kind: 'foreign' };

/**
 * Creates the VM for `req`, or adopts and finishes the one a previous
 * attempt left, and resolves with its ID once it runs. Placement is checked
 * before any request.
 */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const plan = planOf(rt, req, ctx);
  rt.log.trace(
    {
      name: req.name,
      node: plan.node,
      machineType: plan.machineTypeKey,
      image: plan.imageKey,
      templateVmid: plan.templateVmid,
      installation: req.installation,
      cloudInitBytes: req.cloudInit.byteLength,
    },
    'proxmox create resolved',
  );
  const resources = await rt.api.clusterResources(ctx.signal);
  const byName = resources.filter(
    (e) => e.type === 'qemu' && e.template !== 1 && e.name === req.name,
  );
  if (byName.length > 1) {
    throw ctx.permanent(
      `more than one VM is named ${req.name} (VMIDs ${byName.map((e) => e.vmid).join(', ')}); remove the duplicates`,
    );
  }
  let vm: OurVm | undefined;
  if (byName.length === 1) {
    const own = await ownership(rt, ctx, (byName[0] as ResourceEntry).vmid, req, resources);
    if (own.kind === 'ours') vm = own.vm;
  }
  if (vm === undefined) {
    const template = await checkTemplate(rt, ctx, plan, resources);
    vm = await allocate(rt, ctx, req, plan, resources, template);
  } else {
    const status = await rt.api.vmStatus(vm, ctx.signal);
    if (status.status === 'running') {
      rt.log.debug({ vmid: vm.vmid, name: req.name, node: vm.node }, 'proxmox vm adopted running');
      return formatId({ vmid: vm.vmid, name: req.name });
    }
  }
  await provision(rt, ctx, req, plan, vm);
  rt.log.debug(
    { vmid: vm.vmid, name: req.name, node: vm.node, cloudInitBytes: req.cloudInit.byteLength },
    'proxmox vm ensured running',
  );
  return formatId({ vmid: vm.vmid, name: req.name });
}

/** Placement to node, machine type and template; Permanent naming the field when unknown. */
function planOf(rt: Runtime, r: CheckedCreateRequest, ctx: OperationContext): Plan {
  const c = rt.config;
  const zone = r.placement.zone;
  const node =
    c.nodes.length === 1 && (zone === undefined || zone === '')
      ? (c.nodes[0] as string)
      : requireOneOf(ctx.provider, 'placement.zone', zone, c.nodes, 'proxmox.nodes');
  const machineTypeKey = requireOneOf(
    ctx.provider,
    'placement.machineType',
    r.placement.machineType,
    Object.keys(c.machineTypes),
    'proxmox.machineTypes',
  );
  const imageKey = requireOneOf(
    ctx.provider,
    'placement.image',
    r.placement.image,
    Object.keys(c.templates),
    'proxmox.templates',
  );
  return {
    node,
    machineTypeKey,
    machineType: c.machineTypes[machineTypeKey] as MachineTypeEntry,
    imageKey,
    templateVmid: (c.templates[imageKey] as TemplateEntry).vmid,
  };
}

/**
 * Finds and checks the template before any clone: it must be a template,
 * carry no cloud-init drive, and have what the config and resize steps
 * will need, so nothing fails on the clone that fixing the template could
 * have prevented.
 */
async function checkTemplate(
  rt: Runtime,
  ctx: OperationContext,
  plan: Plan,
  resources: readonly ResourceEntry[],
): Promise<{ readonly node: string; readonly config: VmConfig }> {
  const where = `template ${plan.templateVmid} (placement.image "${plan.imageKey}")`;
  const entry = resources.find((e) => e.vmid === plan.templateVmid && e.type === 'qemu');
  if (entry === undefined) throw ctx.permanent(`${where} does not exist`);
  const config = await rt.api.vmConfig({ node: entry.node, vmid: entry.vmid }, ctx.signal);
  if (config.template !== '1') throw ctx.permanent(`${where} is not a template (convert it first)`);
  const drives = cloudInitDrives(config);
  if (drives.length > 0) {
    throw ctx.permanent(
      `${where} has a Proxmox cloud-init drive on ${drives.join(', ')}, which would compete with the seed; remove it`,
    );
  }
  const c = rt.config;
  if ((c.bridge !== undefined || c.vlanTag !== undefined) && config.net0 === undefined) {
    throw ctx.permanent(`${where} has no net0, but proxmox.bridge or proxmox.vlanTag is set`);
  }
  if (plan.machineType.diskGiB !== undefined) {
    const disk = bootDisk(config);
    if (disk === undefined || diskSizeBytes(config[disk]) === undefined) {
      throw ctx.permanent(
        `${where} has no boot disk with a readable size, but machine type "${plan.machineTypeKey}" sets diskGiB`,
      );
    }
  }
  return { node: entry.node, config };
}

/** Probes VMIDs from the UID's hash until one is ours or free, and clones onto a free one. */
async function allocate(
  rt: Runtime,
  ctx: OperationContext,
  r: CheckedCreateRequest,
  plan: Plan,
  resources: readonly ResourceEntry[],
  template: { readonly node: string; readonly config: VmConfig },
): Promise<OurVm> {
  const range = rt.config.vmidRange;
  const storage = rt.config.storage;
  for (let attempt = 0; attempt < MAX_PROBES; attempt++) {
    const vmid = vmidFor(r.uid, attempt, range);
    if (resources.some((e) => e.vmid === vmid)) {
      const own = await ownership(rt, ctx, vmid, r, resources);
      if (own.kind === 'ours') return own.vm;
      continue;
    }
    let upid: string;
    try {
      upid = await rt.api.clone(
        {
          node: template.node,
          vmid: plan.templateVmid,
          newid: vmid,
          name: r.name,
          description: formatDescription({
            uid: r.uid,
            createdAt: rt.clock.now(),
            installation: r.installation,
          }),
          ...(storage === undefined ? {} : { storage }),
          ...(template.node === plan.node ? {} : { target: plan.node }),
        },
        ctx.signal,
      );
    } catch (err) {
      if (!isConfigExists(err)) throw err;
      // Taken between the listing and the clone: judge who took it.
      const own = await ownership(rt, ctx, vmid, r, undefined);
      if (own.kind === 'ours') return own.vm;
      continue;
    }
    await waitTask(rt, ctx, template.node, upid, rt.budgets.clone);
    // The clone copies the template's config, with a MAC of its own on each
    // NIC: read it back only when net0 is to be rewritten.
    const c = rt.config;
    const config =
      c.bridge !== undefined || c.vlanTag !== undefined
        ? await rt.api.vmConfig({ node: plan.node, vmid }, ctx.signal)
        : template.config;
    return { node: plan.node, vmid, config };
  }
  throw ctx.transient(
    `no free VMID for ${r.name} after ${MAX_PROBES} probes in proxmox.vmidRange ${range.min}-${range.max}`,
  );
}

/**
 * The ownership check on a VMID: waits out a clone in progress (a locked
 * or nameless entry), then reads the config and judges the mark.
 */
async function ownership(
  rt: Runtime,
  ctx: OperationContext,
  vmid: number,
  r: CheckedCreateRequest,
  listing: readonly ResourceEntry[] | undefined,
): Promise<Ownership> {
  const deadline = Date.now() + rt.budgets.clone;
  let resources = listing ?? (await rt.api.clusterResources(ctx.signal));
  for (;;) {
    const entry = resources.find((e) => e.vmid === vmid);
    if (entry === undefined || entry.type !== 'qemu' || entry.template === 1) {
      return { kind: 'foreign' };
    }
    // The lock is the config's own; the name is pvestatd's last report: none
    // for a VM it has not seen, `VM <vmid>` for one without a name (a clone
    // copying its disks, and for up to a round after). A clone in progress is
    // waited for, whatever it is listed as; another VM's task lock is not
    // (P2); a name not known from the listing is read from the config.
    const listed = entry.name === `VM ${vmid}` ? undefined : entry.name;
    let waitFor: string | undefined;
    if (entry.lock === 'clone') waitFor = 'clone';
    else if (listed !== undefined && listed !== r.name) return { kind: 'foreign' };
    else if (isTaskLock(entry.lock)) waitFor = entry.lock;
    if (waitFor === undefined) {
      let config: VmConfig;
      try {
        config = await rt.api.vmConfig({ node: entry.node, vmid }, ctx.signal);
      } catch (err) {
        if (isDoesNotExist(err)) return { kind: 'foreign' };
        throw err;
      }
      if (config.lock === 'clone' || (isTaskLock(config.lock) && config.name === r.name)) {
        waitFor = config.lock;
      } else if (isTaskLock(config.lock)) return { kind: 'foreign' };
      else return judge(rt, ctx, r, entry, config);
    }
    if (Date.now() >= deadline) {
      throw ctx.transient(
        `VM ${vmid} stayed locked (${waitFor ?? 'clone'}) for ${Math.round(rt.budgets.clone / 1000)} s; if no task holds it, clear it with qm unlock ${vmid}`,
      );
    }
    await ctx.sleep(rt.budgets.poll);
    resources = await rt.api.clusterResources(ctx.signal);
  }
}

/** Ours when the name and the mark say so (adoptionProblem); Permanent when the name is ours but the VM is not. */
function judge(
  rt: Runtime,
  ctx: OperationContext,
  r: CheckedCreateRequest,
  entry: ResourceEntry,
  config: VmConfig,
): Ownership {
  const vmid = entry.vmid;
  if (config.name !== r.name) return { kind: 'foreign' };
  const problem = adoptionProblem(parseDescription(config.description), {
    uid: r.uid,
    installation: r.installation,
  });
  if (problem !== undefined) {
    throw ctx.permanent(
      `VM ${vmid} is named ${r.name} but ${problem} (requested UID ${r.uid}); the operator never takes over a VM it did not create: rename or remove it`,
    );
  }
  if (entry.lock === 'suspended' || config.lock === 'suspended') {
    throw ctx.permanent(`VM ${vmid} (${r.name}) is hibernated; resume or destroy it`);
  }
  rt.log.debug({ vmid, name: r.name, node: entry.node }, 'proxmox vm adopted');
  return { kind: 'ours', vm: { node: entry.node, vmid, config } };
}
