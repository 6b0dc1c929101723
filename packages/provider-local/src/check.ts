/**
 * The Checker: two targets, in this order: the state folder (it is
 * private, and can be created and written) and the address range (an
 * address of it can be bound). A failure of the file system or of the
 * bind, an operating-system error, or a state folder refused as not
 * private, is the target's own reason; anything else is thrown for the
 * shell, which answers `Timeout` for an ended round or a call past its
 * budget and `APIError` otherwise.
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  type ImplementationChecker,
  Reason,
} from '@proxy-op/contract';
import { UnsafePathError } from '@proxy-op/contract/files';
import { loopbackHosts } from './cidr.js';
import { systemError } from './classify.js';
import type { Runtime } from './runtime.js';

/** The Checker's targets, in order: the state folder, then the address range. */
export const CHECK_TARGETS = ['state-dir', 'address-range'] as const;

/** The `local` provider's own Checker reasons, besides the contract's shared ones. */
export const LocalReason = Object.freeze({
  /** The state folder cannot be created or written, or is no folder. */
  StateDirNotWritable: 'StateDirNotWritable',
  /**
   * The state folder is not private: another user owns it, its group or
   * others can write it, or it is a symbolic link (the message names the fix).
   */
  StateDirUnsafe: 'StateDirUnsafe',
  /** An address of the range cannot be bound on this machine. */
  AddressNotBindable: 'AddressNotBindable',
} as const);

const REACHABLE: CheckAnswer = Object.freeze({ reason: Reason.Reachable, message: 'ok' });

/** The Checker over `rt`. */
export function checker(rt: Runtime): ImplementationChecker {
  return {
    targets: (): CheckTarget[] => [
      { target: 'state-dir', address: rt.config.stateDir },
      { target: 'address-range', address: rt.config.addressRange },
    ],
    check: (target, ctx) =>
      target.target === 'state-dir' ? checkStateDir(rt, ctx) : checkRange(rt, ctx),
  };
}

async function checkStateDir(rt: Runtime, ctx: CheckContext): Promise<CheckAnswer> {
  ctx.details.path = rt.config.stateDir;
  try {
    await rt.seam.checkStateDir(ctx.signal);
  } catch (err) {
    if (UnsafePathError.isInstance(err)) {
      ctx.details.code = err.code;
      const reason =
        err.code === 'NOT_A_FOLDER' ? LocalReason.StateDirNotWritable : LocalReason.StateDirUnsafe;
      return { reason, message: err.message };
    }
    return refused(err, LocalReason.StateDirNotWritable, 'cannot write the state folder', ctx);
  }
  return REACHABLE;
}

async function checkRange(rt: Runtime, ctx: CheckContext): Promise<CheckAnswer> {
  const hosts = loopbackHosts(rt.config.addressRange);
  const first = hosts[0] as string;
  ctx.details.addresses = hosts.length;
  ctx.details.probed = first;
  try {
    await rt.seam.bindable(first, 0, ctx.signal);
  } catch (err) {
    return refused(err, LocalReason.AddressNotBindable, 'cannot bind an address of the range', ctx);
  }
  return REACHABLE;
}

/** The target's reason for an operating-system error; anything else is thrown on. */
function refused(err: unknown, reason: string, what: string, ctx: CheckContext): CheckAnswer {
  const sys = systemError(err);
  if (sys === undefined) throw err;
  ctx.details.code = sys.code;
  return { reason, message: `${what}: ${sys.code}` };
}
