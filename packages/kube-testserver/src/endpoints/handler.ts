/**
 * The handler chain: request info, the body, the filters (faults,
 * authentication, authorization), then a non-resource route or the
 * resource's verb handler (the scale subresource has handlers of its
 * own). The one place a request's error becomes its answer.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { methodNotSupported, notFound } from '../errors.js';
import type { ServerContext } from './context.js';
import { authenticate, authorizeRequest, injectConflict, injectFaults } from './filters.js';
import { createResource } from './handlers/create.js';
import { deleteCollection, deleteResource } from './handlers/delete.js';
import { getResource, listResource, watchResource } from './handlers/get.js';
import { patchResource } from './handlers/patch.js';
import { type ResourceRequest, readBody } from './handlers/rest.js';
import { serveScale } from './handlers/scale.js';
import { updateResource } from './handlers/update.js';
import { negotiate } from './negotiation.js';
import { serveNonResource } from './non-resource.js';
import { type RequestInfo, requestInfo } from './request-info.js';
import { writeError, writeNotFoundPage } from './responsewriters.js';

/** Handles one HTTP request end to end. */
export async function handleRequest(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const method = req.method ?? 'GET';
    const info = requestInfo(method, url);
    ctx.counters.record(info.record);
    const body = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
    await injectFaults(ctx, info.record);
    const user = authenticate(ctx, req);
    authorizeRequest(ctx, info, method, user);
    if (!info.resourceRequest) return serveNonResource(ctx, req, res, url);
    injectConflict(ctx, info);
    serveResource(ctx, req, res, url, info, body);
  } catch (e) {
    writeError(res, e);
  }
}

/** Resolves the resource and its subresource, then runs the verb's handler. */
function serveResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  info: RequestInfo,
  body: Buffer,
) {
  const r = info.record;
  const t = ctx.registry.find(r.group, info.version, r.resource);
  if (t === undefined) return writeNotFoundPage(res);
  const g = { group: t.group, resource: t.resource };
  if (t.namespaced && r.resource === 'namespaces') throw notFound(g, r.name);
  if (
    r.subresource !== '' &&
    !(r.subresource === 'status' && t.statusSubresource) &&
    !(r.subresource === 'scale' && t.scale !== undefined) &&
    !(t.resource === 'namespaces' && r.subresource === 'finalize')
  )
    throw notFound(g, r.name);
  const request: ResourceRequest = {
    ctx,
    req,
    res,
    url,
    type: t,
    namespace: t.namespaced ? r.namespace : '',
    name: r.name,
    scope: r.subresource === 'status' ? 'status' : 'main',
    rendering: negotiate(req.headers.accept),
    body,
  };
  if (r.subresource === 'scale') return serveScale(request, r.verb);
  switch (r.verb) {
    case 'get':
      return getResource(request);
    case 'list':
      return listResource(request);
    case 'watch':
      return watchResource(request);
    case 'create':
      return createResource(request);
    case 'update':
      return updateResource(request);
    case 'patch':
      return patchResource(request);
    case 'delete':
      return deleteResource(request);
    case 'deletecollection':
      return deleteCollection(request);
    default:
      throw methodNotSupported(g, r.verb);
  }
}
