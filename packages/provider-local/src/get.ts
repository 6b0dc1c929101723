/**
 * Get: the state file and the process, never memory; NotFound when the
 * file or its mark is gone; Stopped when the password file the proxy
 * reads is no longer the provider's.
 *
 * @module
 */
import { type Instance, type OperationContext, parseMark } from '@proxy-op/contract';
import { formatId, type LocalId } from './id.js';
import type { Runtime } from './runtime.js';
import { mapLocalState } from './state.js';

/** Reads the instance back from its state file, its process and its health check. */
export async function getInstance(
  rt: Runtime,
  id: LocalId,
  ctx: OperationContext,
): Promise<Instance> {
  const { name } = id;
  const rec = await rt.seam.readState(name, ctx.signal);
  if (rec === undefined) throw ctx.notFound(`instance ${name} does not exist`);
  const mark = parseMark(rec.marks);
  if (mark === undefined) throw ctx.notFound(`instance ${name} is not managed by proxy-op`);
  let alive: boolean | undefined;
  let answers = false;
  let ownFiles = true;
  if (rec.phase === 'running' && rec.pid !== undefined) {
    alive = await rt.seam.alive(name, rec.pid, ctx.signal);
    if (alive && rec.auth !== undefined) {
      ownFiles = await rt.seam.ownsPasswordFile(name, ctx.signal);
      if (!ownFiles) {
        rt.log.warn(
          { name },
          'local password file is no longer the one the provider wrote (gone, a link, or another user’s); the instance reads Stopped',
        );
      }
    }
    if (alive && ownFiles && rec.address !== undefined) {
      answers = await rt.seam.probe(name, rec.address, rec.port, ctx.signal);
    }
  }
  const state = mapLocalState(rec, alive, answers, ownFiles);
  const ip = state === 'Running' ? rec.address : undefined;
  rt.log.trace({ name, state, ip, pid: rec.pid }, 'local instance read');
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state,
    ip,
    installation: mark.installation,
  };
}
