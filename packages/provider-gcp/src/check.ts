/**
 * The Checker: one target, the project, checked with one aggregated-listing
 * page of size 1 filtered on the managed label. That one request proves the
 * credentials, the Compute API being on for the project, and the
 * `compute.instances.list` permission.
 *
 * @module
 */
import { type CheckAnswer, type CheckContext, type CheckTarget, Reason } from '@proxy-op/contract';
import { endpointParts } from './config.js';
import type { GcpContext } from './context.js';
import { ComputeApiError, CredentialsError } from './errors.js';
import { MANAGED_FILTER } from './labels.js';

/** The `gcp` provider's own Checker reasons, each fixed by a different admin action. */
export const GcpReason = {
  /** No credentials found, or the key file cannot be used: mount the Secret or fix ADC. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** The Compute Engine API is not enabled for the project: enable it. */
  ApiNotEnabled: 'ApiNotEnabled',
  /** The project does not exist (or is not visible to these credentials): fix `project`. */
  ProjectNotFound: 'ProjectNotFound',
} as const;

/** The Checker's one target: the project, reached at the endpoint, with its config facts. */
export function checkTargets(c: GcpContext): CheckTarget[] {
  return [
    {
      target: c.config.project,
      address: endpointParts(c.config.endpoint).host,
      details: {
        project: c.config.project,
        endpoint: c.config.endpoint,
        zones: c.config.zones.join(','),
      },
    },
  ];
}

/** Checks the project with one listing page; names the reason of a failure. */
export async function checkProject(c: GcpContext, ctx: CheckContext): Promise<CheckAnswer> {
  try {
    await c.seam.probeInstances(MANAGED_FILTER, ctx.signal);
    return { reason: Reason.Reachable, message: 'listed instances' };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return failure(err, ctx);
  }
}

function failure(err: unknown, ctx: CheckContext): CheckAnswer {
  const message = err instanceof Error ? err.message : 'the check failed';
  if (err instanceof CredentialsError) {
    return { reason: GcpReason.CredentialsUnavailable, message };
  }
  if (!(err instanceof ComputeApiError)) return { reason: Reason.APIError, message };
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
      return err.grpcCode === 4
        ? { reason: Reason.Timeout, message }
        : { reason: Reason.Unreachable, message };
    default:
      return { reason: Reason.APIError, message };
  }
}
