/**
 * UpdateAuth (§4.20, in place): the instance's password file rewritten
 * atomically; the running proxy re-reads it when it changes, so clients
 * with a credential the new file holds are served without a restart.
 *
 * @module
 */
import { type OperationContext, type ProxyAuth, parseMark } from '@proxy-op/contract';
import type { LocalId } from './id.js';
import type { Runtime } from './runtime.js';

/** Writes the new password file of the instance at `id`. */
export async function updateInstanceAuth(
  rt: Runtime,
  id: LocalId,
  auth: ProxyAuth,
  ctx: OperationContext,
): Promise<void> {
  const { name } = id;
  const rec = await rt.seam.readState(name, ctx.signal);
  if (rec === undefined || parseMark(rec.marks) === undefined) {
    throw ctx.notFound(`instance ${name} does not exist`);
  }
  if (rec.auth === undefined) {
    throw ctx.permanent(
      `instance ${name} was started without authentication, so it reads no password file; create it again with auth`,
    );
  }
  await rt.seam.writePasswordFile(name, auth.passwordFile, ctx.signal);
  rt.log.debug({ name }, 'local password file replaced');
}
