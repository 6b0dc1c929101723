/**
 * Process supervision for Create: spawn the proxy of an instance unless
 * its process runs (moving it to another address when its own was taken
 * meanwhile), then wait until it answers its health check. A spawn is
 * never cancelled: it records its pid whatever happens to the Create that
 * started it, and a retry waits for it rather than start a second process.
 *
 * @module
 */
import { type OperationContext, parseMark, raceAbort } from '@proxy-op/contract';
import { pickAddress, underAllocation } from './address.js';
import { LocalError } from './errors.js';
import { atAddress, type InstanceRecord } from './record.js';
import type { Runtime } from './runtime.js';

/**
 * Spawns the proxy of `rec` unless its process runs, then waits until it
 * answers. The seam records the pid as part of the spawn, so no process
 * runs unrecorded whatever happens to this call.
 */
export async function ensureRunning(
  rt: Runtime,
  rec: InstanceRecord,
  ctx: OperationContext,
): Promise<void> {
  const { signal } = ctx;
  let current = rec;
  const pending = rt.spawning.get(rec.name);
  if (pending !== undefined) {
    // A spawn of an earlier, cancelled attempt is still under way: let it land (it records
    // its pid), then decide from what the state file says.
    await raceAbort(
      pending.catch(() => undefined),
      signal,
      ctx.provider,
      ctx.op,
    );
    current = (await rt.seam.readState(rec.name, signal)) ?? rec;
  }
  const running =
    current.phase === 'running' &&
    current.pid !== undefined &&
    (await rt.seam.alive(current.name, current.pid, signal));
  if (!running) {
    const free =
      current.address !== undefined &&
      (await rt.seam.bindable(current.address, current.port, signal));
    if (!free) {
      const uid = parseMark(current.marks)?.uid ?? '';
      current = await underAllocation(rt, signal, async () => {
        const address = await pickAddress(rt, current.name, uid, current.port, signal);
        const moved: InstanceRecord = {
          ...current,
          ...atAddress(address),
          phase: 'starting',
          pid: undefined,
        };
        await rt.seam.writeState(moved, signal);
        return moved;
      });
    } else {
      // A record an earlier version wrote may lack what follows from the address (the
      // health source the provider probes from): the proxy starts with it.
      const next: InstanceRecord = {
        ...current,
        ...atAddress(current.address as string),
        phase: 'starting',
        pid: undefined,
      };
      if (
        current.phase !== 'starting' ||
        current.outgoingAddress !== next.outgoingAddress ||
        current.healthSources?.join() !== next.healthSources?.join()
      ) {
        current = next;
        await rt.seam.writeState(current, signal);
      }
    }
    // The spawn is not given the caller's signal: it records the pid whatever happens to this
    // call, and a retry waits for it rather than start a second process for the same instance.
    const spawning = rt.seam.spawn(current);
    rt.spawning.set(current.name, spawning);
    const forget = () => {
      if (rt.spawning.get(rec.name) === spawning) rt.spawning.delete(rec.name);
    };
    spawning.then(forget, forget);
    const pid = await raceAbort(spawning, signal, ctx.provider, ctx.op);
    current = { ...current, phase: 'running', pid };
  }
  await waitAnswering(rt, current, ctx);
}

/** Waits until the proxy answers; fails when its process exits or `timeouts.startMs` passes. */
async function waitAnswering(
  rt: Runtime,
  rec: InstanceRecord,
  ctx: OperationContext,
): Promise<void> {
  const { startMs } = rt.config.timeouts;
  const { name, address, pid } = rec;
  if (address === undefined || pid === undefined) {
    throw ctx.transient(`instance ${name} has no address or process yet`);
  }
  const verdict = await rt.seam.awaitAnswering(name, pid, address, rec.port, startMs, ctx.signal);
  if (verdict === 'answering') return;
  if (verdict === 'exited') {
    const tail = await rt.seam.logTail(name, ctx.signal);
    throw new LocalError(
      'START_FAILED',
      `the proxy process of ${name} exited while starting${tail === '' ? '' : `: ${tail}`}`,
    );
  }
  throw new LocalError(
    'START_TIMEOUT',
    `the proxy of ${name} did not answer on ${address}:${rec.port} within ${startMs} ms`,
  );
}
