/**
 * updateAuth (contract §2.1, profile `credentialRotation: in-place`): the
 * new password file goes into the running guest through the QEMU guest
 * agent, where the operator's default cloud-init put the first one
 * (`SERVICE_PASSWORD_FILE` of `@proxy-op/squid-config`). It replaces the
 * file whole: a copy of the old one (`cp -p`, so owner, group and mode
 * stay: root and the proxy group, 0640) takes the new bytes and is renamed
 * over it (`mv -f`), so Squid's helper, which re-reads the file when it
 * changes, never reads half of one.
 *
 * @module
 */
import type { OperationContext, ProxyAuth } from '@proxy-op/contract';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import { guestRun, guestWriteFile } from './agent.js';
import { GuestProgramError } from './errors.js';
import { markedDomain } from './get.js';
import type { DomainId } from './id.js';
import { cleanupSignal, type Runtime, signalOf } from './runtime.js';
import { isActive } from './state.js';

/** Where the new file is made before it is renamed over the old one. */
const STAGED = `${SERVICE_PASSWORD_FILE}.new`;

/** Writes the password file into the domain's guest; see the module comment. */
export async function updateInstanceAuth(
  rt: Runtime,
  id: DomainId,
  auth: ProxyAuth,
  ctx: OperationContext,
): Promise<void> {
  const { seam, dom, st } = await markedDomain(rt, id, ctx);
  const where = `domain ${id.name} on host ${id.host}`;
  if (!isActive(st.state)) {
    throw ctx.transient(
      `${where} is not running: its proxy can take a new password file once it runs again`,
    );
  }
  const signal = signalOf(ctx);
  try {
    await guestRun(seam, dom, '/bin/cp', ['-p', SERVICE_PASSWORD_FILE, STAGED], signal);
  } catch (err) {
    if (GuestProgramError.isInstance(err) && /no such file/i.test(err.stderr)) {
      throw ctx.permanent(
        `the guest of ${where} has no ${SERVICE_PASSWORD_FILE}: its proxy was not made with credentials (the operator's default cloud-init writes that file; a cloud-init of your own must too)`,
        err,
      );
    }
    throw err;
  }
  await guestWriteFile(seam, dom, STAGED, auth.passwordFile, signal, () => cleanupSignal(rt));
  await guestRun(seam, dom, '/bin/mv', ['-f', STAGED, SERVICE_PASSWORD_FILE], signal);
  rt.log.debug(
    { host: id.host, name: id.name, bytes: auth.passwordFile.byteLength },
    `${rt.flavour.prefix} password file written in the guest`,
  );
}
