/**
 * Create's steps after the clone, each safe to repeat: upload the seed,
 * write the config, resize the boot disk, start, wait for `running`.
 *
 * @module
 */
import type { CheckedCreateRequest, OperationContext } from '@proxy-op/contract';
import { buildSeedISO, NoCloudError } from '@proxy-op/nocloud';
import type { MachineTypeEntry } from './config.js';
import { bootDisk, diskSizeBytes, rewriteNet0 } from './disk.js';
import { TaskFailedError } from './errors.js';
import { PROXY_TAG } from './mark.js';
import { type Runtime, seedName } from './runtime.js';
import type { VmConfig } from './seam.js';
import { waitTask } from './tasks.js';

/** Where a request's placement resolved to. */
export interface Plan {
  readonly node: string;
  readonly machineTypeKey: string;
  readonly machineType: MachineTypeEntry;
  readonly imageKey: string;
  readonly templateVmid: number;
}

/** A VM of ours: where it is, and its config as last read (or as cloned). */
export interface OurVm {
  readonly node: string;
  readonly vmid: number;
  readonly config: VmConfig;
}

/** Steps 5 to 9 of Create: seed, config, resize, start, running wait. */
export async function provision(
  rt: Runtime,
  ctx: OperationContext,
  r: CheckedCreateRequest,
  plan: Plan,
  vm: OurVm,
): Promise<void> {
  const { api, config: c } = rt;
  const ref = { node: vm.node, vmid: vm.vmid };
  const filename = seedName(r.name);
  const upload = await api.uploadIso(
    { node: vm.node, storage: c.isoStorage, filename, data: seedOf(rt, ctx, r) },
    ctx.signal,
  );
  await waitTask(rt, ctx, vm.node, upload, rt.budgets.upload);

  const params: Record<string, string> = {
    cores: String(plan.machineType.cores),
    memory: String(plan.machineType.memoryMiB),
    agent: '1',
    tags: PROXY_TAG,
    ide2: `${c.isoStorage}:iso/${filename},media=cdrom`,
  };
  const net0 = vm.config.net0;
  if ((c.bridge !== undefined || c.vlanTag !== undefined) && net0 !== undefined) {
    params.net0 = rewriteNet0(net0, { bridge: c.bridge, vlanTag: c.vlanTag });
  }
  await api.setVmConfig({ ...ref, params }, ctx.signal);

  const diskGiB = plan.machineType.diskGiB;
  if (diskGiB !== undefined) {
    const disk = bootDisk(vm.config);
    const size = disk === undefined ? undefined : diskSizeBytes(vm.config[disk]);
    if (disk === undefined || size === undefined) {
      throw ctx.permanent(
        `VM ${vm.vmid} has no boot disk with a readable size, but machine type "${plan.machineTypeKey}" sets diskGiB`,
      );
    }
    if (diskGiB * 2 ** 30 > size) {
      const upid = await api.resize({ ...ref, disk, size: `${diskGiB}G` }, ctx.signal);
      await waitTask(rt, ctx, vm.node, upid, rt.budgets.resize);
    }
  }

  await start(rt, ctx, vm);
  const deadline = Date.now() + rt.budgets.running;
  for (;;) {
    const st = await api.vmStatus(ref, ctx.signal);
    if (st.status === 'running' && (st.qmpstatus ?? 'running') === 'running') return;
    if (st.status === 'stopped') {
      throw ctx.transient(`VM ${vm.vmid} stopped right after its start`);
    }
    if (Date.now() >= deadline) {
      throw ctx.transient(
        `VM ${vm.vmid} was not running ${Math.round(rt.budgets.running / 1000)} s after its start (status ${st.status}, qmpstatus ${st.qmpstatus ?? 'none'})`,
      );
    }
    await ctx.sleep(rt.budgets.poll);
  }
}

/** The seed ISO for the request; Permanent when it cannot be built. */
function seedOf(rt: Runtime, ctx: OperationContext, r: CheckedCreateRequest): Uint8Array {
  try {
    return buildSeedISO({
      instanceId: r.name,
      hostname: r.name,
      userData: r.cloudInit,
      ...(rt.config.vendorData === undefined ? {} : { vendorData: rt.config.vendorData }),
      installGuestAgent: rt.config.installGuestAgent,
    });
  } catch (err) {
    if (err instanceof NoCloudError) {
      throw ctx.permanent(`the seed ISO cannot be built: ${err.code}`, err);
    }
    throw err;
  }
}

/**
 * Starts the VM and waits for the start task. A start that fails while the
 * VM runs anyway (an earlier attempt's start, cut off on our side, was
 * still carried out: Proxmox answers `VM <vmid> already running`) has
 * reached what it was for.
 */
async function start(rt: Runtime, ctx: OperationContext, vm: OurVm): Promise<void> {
  const ref = { node: vm.node, vmid: vm.vmid };
  const upid = await rt.api.start(ref, ctx.signal);
  try {
    await waitTask(rt, ctx, vm.node, upid, rt.budgets.start);
  } catch (err) {
    if (!TaskFailedError.isInstance(err)) throw err;
    const st = await rt.api.vmStatus(ref, ctx.signal);
    if (st.status !== 'running') throw err;
    rt.log.debug({ vmid: vm.vmid, upid }, 'proxmox vm already running');
  }
}
