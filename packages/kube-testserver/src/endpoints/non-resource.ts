/**
 * The non-resource routes: the health checks, `/version`, discovery
 * (`/api`, `/apis` and each group and group-version document, legacy and
 * aggregated) and the OpenAPI v3 documents.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AGGREGATED_V2,
  AGGREGATED_V2BETA1,
  aggregatedDiscovery,
  aggregatedVersion,
  apiGroupDoc,
  apiGroupList,
  apiResourceList,
  apiVersions,
} from '../discovery.js';
import { StatusError } from '../errors.js';
import { groupVersionDocument, openapiRoot } from '../openapi.js';
import type { ServerContext } from './context.js';
import { writeError, writeJson, writeNotFoundPage, writeText } from './responsewriters.js';

/** Serves a GET or HEAD of a path that names no resource; 405 for any other method. */
export function serveNonResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
) {
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const accept = req.headers.accept ?? '';
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return writeError(
      res,
      new StatusError({
        message: 'the server does not allow this method on the requested resource',
        reason: 'MethodNotAllowed',
        code: 405,
      }),
    );
  }
  switch (path) {
    case '/healthz':
    case '/livez':
    case '/readyz':
      return writeText(res, 200, 'ok');
    case '/version':
      return writeJson(res, 200, {
        major: ctx.version.major,
        minor: ctx.version.minor,
        gitVersion: ctx.version.gitVersion,
        gitCommit: '0000000000000000000000000000000000000000',
        gitTreeState: 'clean',
        buildDate: '2025-01-01T00:00:00Z',
        goVersion: 'go1.23.0',
        compiler: 'gc',
        platform: 'linux/amd64',
      });
    case '/api':
    case '/apis': {
      const core = path === '/api';
      const v = aggregatedVersion(accept);
      if (v !== undefined)
        return writeJson(res, 200, aggregatedDiscovery(ctx.registry, core, v), {
          'Content-Type': v === 'v2' ? AGGREGATED_V2 : AGGREGATED_V2BETA1,
          Vary: 'Accept',
        });
      return writeJson(
        res,
        200,
        core ? apiVersions(ctx.serverAddress()) : apiGroupList(ctx.registry),
        { Vary: 'Accept' },
      );
    }
    case '/openapi/v3':
      return writeJson(res, 200, openapiRoot(ctx.registry, ctx.version.gitVersion));
    default:
      break;
  }
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] === 'apis' && parts.length === 2) {
    const doc = apiGroupDoc(ctx.registry, parts[1]!);
    return doc === undefined ? writeNotFoundPage(res) : writeJson(res, 200, doc);
  }
  if ((parts[0] === 'api' && parts.length === 2) || (parts[0] === 'apis' && parts.length === 3)) {
    const group = parts[0] === 'api' ? '' : parts[1]!;
    const doc = apiResourceList(ctx.registry, group, parts.at(-1)!);
    return doc === undefined ? writeNotFoundPage(res) : writeJson(res, 200, doc);
  }
  if (parts[0] === 'openapi' && parts[1] === 'v3') {
    const rest = parts.slice(2);
    const group = rest[0] === 'api' ? '' : rest[0] === 'apis' ? (rest[1] ?? '') : undefined;
    const version = rest[0] === 'api' ? rest[1] : rest[2];
    if (group !== undefined && version !== undefined) {
      const doc = groupVersionDocument(ctx.registry, group, version, ctx.version.gitVersion);
      if (doc !== undefined)
        return writeJson(res, 200, doc, {
          'Cache-Control': 'public, immutable',
          Etag: `"${url.searchParams.get('hash') ?? ''}"`,
        });
    }
  }
  return writeNotFoundPage(res);
}
