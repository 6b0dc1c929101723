/**
 * The filters that run before any handler, in the real server's order
 * after request info: injected delays and failures, authentication of the
 * bearer token, RBAC authorization, and the injected optimistic-lock
 * conflicts of resource writes (the real server's `endpoints/filters`,
 * plus the test faults).
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { conflict, forbidden, StatusError, unauthorized } from '../errors.js';
import type { RequestRecord } from '../faults.js';
import { authorize, forbiddenMessage, type User } from '../rbac.js';
import type { ServerContext } from './context.js';
import type { RequestInfo } from './request-info.js';

const ANONYMOUS: User = {
  name: 'system:anonymous',
  groups: ['system:unauthenticated'],
  admin: false,
};

/** Holds the request for any matching delay, then throws the first matching injected failure. */
export async function injectFaults(ctx: ServerContext, record: RequestRecord): Promise<void> {
  const delay = ctx.faults.delayFor(record);
  if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  const failure = ctx.faults.takeFailure(record);
  if (failure !== undefined)
    throw new StatusError({
      message: failure.message,
      reason: failure.reason,
      code: failure.status,
    });
}

/** The user a request's bearer token names; anonymous without one, 401 for an unknown one. */
export function authenticate(ctx: ServerContext, req: IncomingMessage): User {
  const auth = req.headers.authorization;
  if (auth === undefined) return ANONYMOUS;
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  const found = m === null ? undefined : ctx.tokens.get(m[1]!);
  if (found === undefined) throw unauthorized();
  return found;
}

/** Throws 403 Forbidden unless RBAC allows the user this request. */
export function authorizeRequest(
  ctx: ServerContext,
  info: RequestInfo,
  method: string,
  user: User,
): void {
  const record = info.record;
  const attributes = {
    user,
    verb: info.resourceRequest ? record.verb : method === 'HEAD' ? 'head' : record.verb,
    resourceRequest: info.resourceRequest,
    group: record.group,
    resource: record.resource,
    subresource: record.subresource,
    namespace: record.namespace,
    name: record.name,
    path: record.path,
  };
  if (!authorize(ctx.store, attributes)) {
    throw forbidden(
      { group: record.group, resource: info.resourceRequest ? record.resource : '' },
      record.name,
      forbiddenMessage(attributes),
    );
  }
}

/** Throws 409 Conflict when a test asked for one on this resource request. */
export function injectConflict(ctx: ServerContext, info: RequestInfo): void {
  const record = info.record;
  if (!ctx.faults.takeConflict(record)) return;
  const t = ctx.registry.find(record.group, info.version, record.resource);
  throw conflict(
    { group: record.group, resource: t?.resource ?? record.resource },
    record.name === '' ? 'unknown' : record.name,
  );
}
