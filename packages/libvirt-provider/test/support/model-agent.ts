// The QEMU guest agent of a model domain, through libvirt: the shared guest agent model of
// @proxy-op/testkit (files, guest-exec of cp and mv) behind libvirt 9's JSON text and error
// wrapping. The stack suite runs the same updateAuth against the real agent of the test guest,
// and the seam contract checks libvirt's refusals (not running, agent not connected) on a real
// daemon.
import { ErrorCode, ErrorDomain } from '@proxy-op/libvirt-rpc';
import { GuestAgentFailure, GuestAgentModel } from '@proxy-op/testkit';
import { libvirtError } from './model-errors.js';

export type { GuestFile } from '@proxy-op/testkit';

/** A guest's agent as `virDomainQemuAgentCommand` reaches it. */
export class ModelGuestAgent extends GuestAgentModel {
  /** Answers one command's JSON text with the agent's JSON reply text. */
  answer(text: string): string {
    let req: { execute?: unknown; arguments?: Record<string, unknown> };
    try {
      req = JSON.parse(text) as typeof req;
    } catch {
      throw libvirtError(
        ErrorCode.ERR_INTERNAL_ERROR,
        ErrorDomain.FROM_QEMU,
        'internal error: cannot parse json',
      );
    }
    try {
      return JSON.stringify({ return: this.run(String(req.execute), req.arguments ?? {}) });
    } catch (err) {
      if (!(err instanceof GuestAgentFailure)) throw err;
      throw libvirtError(
        ErrorCode.ERR_INTERNAL_ERROR,
        ErrorDomain.FROM_QEMU,
        `internal error: unable to execute QEMU agent command '${err.command}': ${err.desc}`,
      );
    }
  }
}
