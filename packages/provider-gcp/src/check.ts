/**
 * The Checker: one target, the project, checked with one aggregated-listing
 * page of size 1 filtered on the managed label. That one request proves the
 * credentials, the Compute Engine API being on for the project, and the
 * `compute.instances.list` permission. The shell answers `Timeout` for a
 * round that ended or a call past its budget; the `failed` hook names the
 * reason of every other failure it knows.
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
import { endpointParts } from './config.js';
import { ComputeApiError, CredentialsError } from './errors.js';
import { MANAGED_FILTER } from './labels.js';
import type { Runtime } from './runtime.js';

/** The `gcp` provider's own Checker reasons, each fixed by a different admin action. */
export const GcpReason = Object.freeze({
  /** No credentials found, or the key file cannot be used: mount the Secret or fix ADC. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** The Compute Engine API is not enabled for the project: enable it. */
  ApiNotEnabled: 'ApiNotEnabled',
  /** The project does not exist (or is not visible to these credentials): fix `project`. */
  ProjectNotFound: 'ProjectNotFound',
} as const);

/** The Checker over `rt`: the project, probed with one listing page. */
export function checker(rt: Runtime): ImplementationChecker {
  return {
    targets: () => targets(rt),
    check: async (_target, ctx) => {
      await rt.seam.probeInstances(MANAGED_FILTER, ctx.signal);
      return { reason: Reason.Reachable, message: 'listed instances' };
    },
    failed,
  };
}

/** The Checker's one target: the project, reached at the endpoint, with its config facts. */
function targets(rt: Runtime): CheckTarget[] {
  return [
    {
      target: rt.config.project,
      address: endpointParts(rt.config.endpoint).host,
      details: {
        project: rt.config.project,
        endpoint: rt.config.endpoint,
        zones: rt.config.zones.join(','),
      },
    },
  ];
}

/**
 * The reason of a failed probe: missing or unusable credentials; 401
 * Unauthorized; 403 ApiNotEnabled (`accessNotConfigured`,
 * `SERVICE_DISABLED`) or Forbidden; 404 ProjectNotFound; no answer at all
 * Unreachable. The status and reasons go into the details. Anything else is
 * left to the shell (`APIError`).
 */
function failed(err: unknown, ctx: CheckContext): CheckAnswer | undefined {
  if (CredentialsError.isInstance(err)) {
    return { reason: GcpReason.CredentialsUnavailable, message: err.message };
  }
  if (!ComputeApiError.isInstance(err)) return undefined;
  const message = err.message;
  if (err.httpStatus !== undefined) ctx.details.httpStatus = err.httpStatus;
  if (err.reasons.length > 0) ctx.details.reasons = err.reasons.join(',');
  switch (err.httpStatus) {
    case 401:
      return { reason: Reason.Unauthorized, message };
    case 403:
      if (err.reasons.includes('accessNotConfigured') || err.status === 'SERVICE_DISABLED') {
        return { reason: GcpReason.ApiNotEnabled, message };
      }
      return { reason: Reason.Forbidden, message };
    case 404:
      return { reason: GcpReason.ProjectNotFound, message };
    case undefined:
      return { reason: Reason.Unreachable, message };
    default:
      return undefined;
  }
}
