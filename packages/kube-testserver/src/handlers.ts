import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import {
  AGGREGATED_V2,
  AGGREGATED_V2BETA1,
  aggregatedDiscovery,
  aggregatedVersion,
  apiGroupDoc,
  apiGroupList,
  apiResourceList,
  apiVersions,
} from './discovery.js';
import type { DeleteOptions, Engine, WriteOptions } from './engine.js';
import {
  badRequest,
  conflict,
  expired,
  forbidden,
  internalError,
  methodNotSupported,
  notAcceptable,
  notFound,
  StatusError,
  unauthorized,
  unsupportedMediaType,
} from './errors.js';
import type { FaultState, RequestCounters, RequestRecord } from './faults.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from './json.js';
import { groupVersionDocument, openapiRoot } from './openapi.js';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import { authorize, forbiddenMessage, type User } from './rbac.js';
import type { Registry } from './registry.js';
import { groupVersion, type ResourceType, resourceKey } from './resource-type.js';
import { type Predicate, parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { Store } from './store.js';
import { parseIncludeObject, toPartial, toTable } from './table.js';
import { type OpenWatch, serveWatch } from './watch.js';

/** What the request handler needs from the server. */
export interface ServerContext {
  readonly store: Store;
  readonly registry: Registry;
  readonly engine: Engine;
  readonly tokens: ReadonlyMap<string, User>;
  readonly version: { major: string; minor: string; gitVersion: string };
  readonly serverAddress: () => string;
  readonly openWatches: Set<OpenWatch>;
  readonly bookmarkIntervalMs: number;
  readonly faults: FaultState;
  readonly counters: RequestCounters;
}

const ANONYMOUS: User = {
  name: 'system:anonymous',
  groups: ['system:unauthenticated'],
  admin: false,
};
const PATCH_TYPES_BUILTIN = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
const PATCH_TYPES_CUSTOM = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/apply-patch+yaml',
];

interface Parsed {
  readonly record: RequestRecord;
  readonly resourceRequest: boolean;
  readonly version: string;
}

/** Splits a path into the request attributes, as the real server's `RequestInfoFactory`. */
function parsePath(method: string, url: URL): Parsed {
  const parts = url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const nonResource = (): Parsed => ({
    record: {
      verb: method.toLowerCase(),
      group: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
      path: url.pathname,
    },
    resourceRequest: false,
    version: '',
  });
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    version = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1]!;
    version = parts[2]!;
    rest = parts.slice(3);
  } else return nonResource();
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1]!;
    if (rest.length > 2 && rest[2] !== 'status' && rest[2] !== 'finalize') rest = rest.slice(2);
  }
  const resource = rest[0] ?? '';
  const name = rest[1] ?? '';
  const subresource = rest[2] ?? '';
  const watch = url.searchParams.get('watch');
  let verb: string;
  switch (method) {
    case 'GET':
    case 'HEAD':
      verb = watch === 'true' || watch === '1' ? 'watch' : name === '' ? 'list' : 'get';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name === '' ? 'deletecollection' : 'delete';
      break;
    default:
      verb = method.toLowerCase();
  }
  return {
    record: { verb, group, resource, subresource, namespace, name, path: url.pathname },
    resourceRequest: true,
    version,
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function commonHeaders(): Record<string, string> {
  return { 'Audit-Id': randomUUID(), 'Cache-Control': 'no-cache, private' };
}

function send(
  res: ServerResponse,
  code: number,
  body: JsonValue,
  headers: Record<string, string> = {},
  warnings: readonly string[] = [],
) {
  const text = JSON.stringify(body);
  const h: Record<string, string | string[]> = {
    ...commonHeaders(),
    'Content-Type': 'application/json',
    ...headers,
  };
  if (warnings.length > 0) h.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, h);
  res.end(text);
}

function sendError(res: ServerResponse, e: unknown) {
  const err =
    e instanceof StatusError ? e : internalError(e instanceof Error ? e.message : String(e));
  if (res.headersSent) {
    res.destroy();
    return;
  }
  send(res, err.code, err.status as unknown as JsonValue, {
    ...err.headers,
    'X-Content-Type-Options': 'nosniff',
  });
}

type Rendering =
  | { as: 'object' }
  | { as: 'table'; apiVersion: string }
  | { as: 'partial'; apiVersion: string };

/** What the `Accept` header asks for: JSON objects, a Table, or PartialObjectMetadata. */
function negotiate(accept: string | undefined): Rendering {
  if (accept === undefined || accept.trim() === '') return { as: 'object' };
  let plainOk = false;
  for (const raw of accept.split(',')) {
    const [type, ...paramList] = raw.split(';').map((s) => s.trim());
    const params = new Map(paramList.map((p) => p.split('=') as [string, string]));
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const as = params.get('as');
    const g = params.get('g');
    const v = params.get('v');
    if (as === undefined) {
      plainOk = true;
      continue;
    }
    if (g === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1')) {
      if (as === 'Table') return { as: 'table', apiVersion: `meta.k8s.io/${v}` };
      if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList')
        return { as: 'partial', apiVersion: `meta.k8s.io/${v}` };
    }
  }
  if (plainOk) return { as: 'object' };
  if (/application\/vnd\.kubernetes\.protobuf|application\/yaml|application\/cbor/.test(accept)) {
    throw notAcceptable('only the following media types are accepted: application/json');
  }
  return { as: 'object' };
}

/** Handles one HTTP request end to end. */
export async function handleRequest(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const method = req.method ?? 'GET';
    const parsed = parsePath(method, url);
    const record = parsed.record;
    ctx.counters.record(record);
    const body = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
    const delay = ctx.faults.delayFor(record);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const failure = ctx.faults.takeFailure(record);
    if (failure !== undefined)
      throw new StatusError({
        message: failure.message,
        reason: failure.reason,
        code: failure.status,
      });

    const auth = req.headers.authorization;
    let user = ANONYMOUS;
    if (auth !== undefined) {
      const m = /^Bearer\s+(\S+)$/i.exec(auth);
      const found = m === null ? undefined : ctx.tokens.get(m[1]!);
      if (found === undefined) throw unauthorized();
      user = found;
    }
    const attributes = {
      user,
      verb: parsed.resourceRequest ? record.verb : method === 'HEAD' ? 'head' : record.verb,
      resourceRequest: parsed.resourceRequest,
      group: record.group,
      resource: record.resource,
      subresource: record.subresource,
      namespace: record.namespace,
      name: record.name,
      path: record.path,
    };
    if (!authorize(ctx.store, attributes)) {
      throw forbidden(
        { group: record.group, resource: parsed.resourceRequest ? record.resource : '' },
        record.name,
        forbiddenMessage(attributes),
      );
    }
    if (!parsed.resourceRequest) return serveNonResource(ctx, req, res, url);
    if (ctx.faults.takeConflict(record)) {
      const t = ctx.registry.find(record.group, parsed.version, record.resource);
      throw conflict(
        { group: record.group, resource: t?.resource ?? record.resource },
        record.name === '' ? 'unknown' : record.name,
      );
    }
    await serveResource(ctx, req, res, url, parsed, body);
  } catch (e) {
    sendError(res, e);
  }
}

function serveNonResource(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, url: URL) {
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const accept = req.headers.accept ?? '';
  const notFoundPage = () => {
    res.writeHead(404, {
      ...commonHeaders(),
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end('404 page not found\n');
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendError(
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
      res.writeHead(200, {
        ...commonHeaders(),
        'Content-Type': 'text/plain; charset=utf-8',
        'X-Content-Type-Options': 'nosniff',
      });
      res.end('ok');
      return;
    case '/version':
      return send(res, 200, {
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
        return send(res, 200, aggregatedDiscovery(ctx.registry, core, v), {
          'Content-Type': v === 'v2' ? AGGREGATED_V2 : AGGREGATED_V2BETA1,
          Vary: 'Accept',
        });
      return send(res, 200, core ? apiVersions(ctx.serverAddress()) : apiGroupList(ctx.registry), {
        Vary: 'Accept',
      });
    }
    case '/openapi/v3':
      return send(res, 200, openapiRoot(ctx.registry, ctx.version.gitVersion));
    default:
      break;
  }
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] === 'apis' && parts.length === 2) {
    const doc = apiGroupDoc(ctx.registry, parts[1]!);
    return doc === undefined ? notFoundPage() : send(res, 200, doc);
  }
  if ((parts[0] === 'api' && parts.length === 2) || (parts[0] === 'apis' && parts.length === 3)) {
    const group = parts[0] === 'api' ? '' : parts[1]!;
    const doc = apiResourceList(ctx.registry, group, parts.at(-1)!);
    return doc === undefined ? notFoundPage() : send(res, 200, doc);
  }
  if (parts[0] === 'openapi' && parts[1] === 'v3') {
    const rest = parts.slice(2);
    const group = rest[0] === 'api' ? '' : rest[0] === 'apis' ? (rest[1] ?? '') : undefined;
    const version = rest[0] === 'api' ? rest[1] : rest[2];
    if (group !== undefined && version !== undefined) {
      const doc = groupVersionDocument(ctx.registry, group, version, ctx.version.gitVersion);
      if (doc !== undefined)
        return send(res, 200, doc, {
          'Cache-Control': 'public, immutable',
          Etag: `"${url.searchParams.get('hash') ?? ''}"`,
        });
    }
  }
  return notFoundPage();
}

function parseJson(body: Buffer, t: ResourceType): JsonValue {
  try {
    return JSON.parse(body.toString('utf8')) as JsonValue;
  } catch (e) {
    throw badRequest(
      `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

function parseBody(req: IncomingMessage, body: Buffer, t: ResourceType): JsonObject {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim();
  let v: JsonValue;
  if (type === 'application/json' || type === '' || type === '*/*') v = parseJson(body, t);
  else if (type === 'application/yaml') v = parseYaml(body.toString('utf8')) as JsonValue;
  else throw unsupportedMediaType(['application/json', 'application/yaml']);
  if (!isObject(v))
    throw badRequest(`Object 'Kind' is missing in '${body.toString('utf8').slice(0, 100)}'`);
  const kind = v.kind;
  const apiVersion = v.apiVersion;
  if (
    (typeof kind === 'string' && kind !== '' && kind !== t.kind) ||
    (typeof apiVersion === 'string' && apiVersion !== '' && apiVersion !== groupVersion(t))
  ) {
    throw badRequest(
      `the API version in the data (${String(apiVersion ?? '')}) does not match the expected API version (${groupVersion(t)})`,
    );
  }
  return v;
}

function writeOptions(
  url: URL,
  verb: WriteOptions['verb'],
  userAgent: string | undefined,
): WriteOptions {
  const fv = url.searchParams.get('fieldValidation');
  if (fv !== null && fv !== 'Strict' && fv !== 'Warn' && fv !== 'Ignore')
    throw badRequest(
      `fieldValidation: Unsupported value: "${fv}": supported values: "Ignore", "Strict", "Warn"`,
    );
  const dryRun = url.searchParams.getAll('dryRun');
  for (const d of dryRun)
    if (d !== 'All') throw badRequest(`dryRun: Unsupported value: "${d}": supported values: "All"`);
  const manager =
    url.searchParams.get('fieldManager') ?? (userAgent ?? '').split('/')[0]!.slice(0, 128);
  return {
    fieldManager: manager,
    dryRun: dryRun.length > 0,
    fieldValidation: fv ?? 'Warn',
    warnings: [],
    verb,
  };
}

function predicateFor(url: URL, t: ResourceType): Predicate {
  const ls = url.searchParams.get('labelSelector');
  const fs = url.searchParams.get('fieldSelector');
  const l = ls === null || ls === '' ? undefined : parseLabelSelector(ls);
  const f = fs === null || fs === '' ? undefined : parseFieldSelector(fs, resourceKey(t), t.custom);
  return (o) => (l === undefined || l(o)) && (f === undefined || f(o));
}

function withTypeMeta(t: ResourceType, o: JsonObject): JsonObject {
  return { apiVersion: groupVersion(t), kind: t.kind, ...o };
}

function render(t: ResourceType, o: JsonObject, r: Rendering, url: URL): JsonValue {
  if (r.as === 'table')
    return toTable(
      t,
      [o],
      { resourceVersion: str(meta(o), 'resourceVersion') ?? '' },
      {
        includeObject: parseIncludeObject(url.searchParams.get('includeObject')),
        noHeaders: false,
        apiVersion: r.apiVersion,
      },
    );
  if (r.as === 'partial') return toPartial(o, r.apiVersion);
  return o;
}

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${start}\u0000` })).toString(
    'base64',
  );
}

function decodeContinue(token: string): ContinueToken {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as JsonObject;
    if (v.v !== 'meta.k8s.io/v1' || typeof v.rv !== 'number' || typeof v.start !== 'string')
      throw new Error('bad');
    return { rv: v.rv, start: v.start.endsWith('\u0000') ? v.start.slice(0, -1) : v.start };
  } catch {
    throw badRequest(
      'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    );
  }
}

function deleteOptions(url: URL, body: Buffer): DeleteOptions {
  let o: JsonObject = {};
  if (body.length > 0) {
    const v = JSON.parse(body.toString('utf8')) as JsonValue;
    if (isObject(v)) o = v;
  }
  const policy =
    url.searchParams.get('propagationPolicy') ??
    (typeof o.propagationPolicy === 'string' ? o.propagationPolicy : undefined);
  const orphan =
    url.searchParams.get('orphanDependents') ??
    (typeof o.orphanDependents === 'boolean' ? String(o.orphanDependents) : undefined);
  if (
    policy !== undefined &&
    policy !== 'Orphan' &&
    policy !== 'Background' &&
    policy !== 'Foreground'
  )
    throw new StatusError({
      message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan", "nil"`,
      reason: 'Invalid',
      code: 422,
    });
  const graceText =
    url.searchParams.get('gracePeriodSeconds') ??
    (typeof o.gracePeriodSeconds === 'number' ? String(o.gracePeriodSeconds) : undefined);
  const grace = graceText === undefined ? undefined : Number(graceText);
  if (grace !== undefined && !Number.isInteger(grace))
    throw badRequest(`invalid value for gracePeriodSeconds: "${graceText}"`);
  const pre = isObject(o.preconditions) ? o.preconditions : {};
  const dryRun =
    url.searchParams.getAll('dryRun').length > 0 ||
    (Array.isArray(o.dryRun) && o.dryRun.length > 0);
  return {
    ...(policy !== undefined
      ? { propagationPolicy: policy }
      : orphan === 'true'
        ? { propagationPolicy: 'Orphan' as const }
        : {}),
    preconditions: {
      ...(typeof pre.uid === 'string' ? { uid: pre.uid } : {}),
      ...(typeof pre.resourceVersion === 'string' ? { resourceVersion: pre.resourceVersion } : {}),
    },
    dryRun,
    ...(grace === undefined ? {} : { gracePeriodSeconds: grace }),
  };
}

async function serveResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  parsed: Parsed,
  body: Buffer,
): Promise<void> {
  const r = parsed.record;
  const t = ctx.registry.find(r.group, parsed.version, r.resource);
  if (t === undefined) {
    res.writeHead(404, {
      ...commonHeaders(),
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end('404 page not found\n');
    return;
  }
  const g = { group: t.group, resource: t.resource };
  const namespace = t.namespaced ? r.namespace : '';
  if (t.namespaced && r.resource === 'namespaces') throw notFound(g, r.name);
  if (
    r.subresource !== '' &&
    !(r.subresource === 'status' && t.statusSubresource) &&
    !(t.resource === 'namespaces' && r.subresource === 'finalize')
  )
    throw notFound(g, r.name);
  const scope = r.subresource === 'status' ? 'status' : 'main';
  const rendering = negotiate(req.headers.accept);
  const ua = req.headers['user-agent'];
  switch (r.verb) {
    case 'get': {
      const o = ctx.engine.get(t, namespace, r.name);
      return send(res, 200, render(t, withTypeMeta(t, o), rendering, url));
    }
    case 'list':
      return serveList(ctx, t, namespace, url, rendering, res);
    case 'watch':
      serveWatch(
        ctx.store,
        {
          type: t,
          namespace,
          predicate: predicateFor(url, t),
          resourceVersion: url.searchParams.get('resourceVersion') ?? '',
          timeoutSeconds: url.searchParams.has('timeoutSeconds')
            ? Number(url.searchParams.get('timeoutSeconds'))
            : undefined,
          allowBookmarks: url.searchParams.get('allowWatchBookmarks') === 'true',
          sendInitialEvents: url.searchParams.get('sendInitialEvents') === 'true',
          table:
            rendering.as === 'table'
              ? { includeObject: parseIncludeObject(url.searchParams.get('includeObject')) }
              : undefined,
        },
        res,
        {
          bookmarkIntervalMs: ctx.bookmarkIntervalMs,
          open: ctx.openWatches,
          headers: commonHeaders(),
        },
      );
      return;
    case 'create': {
      if (r.name !== '') throw methodNotSupported(g, 'create');
      const opts = writeOptions(url, 'create', ua);
      const obj = parseBody(req, body, t);
      const created = ctx.engine.create(t, namespace, obj, opts);
      return send(res, 201, render(t, created, rendering, url), {}, opts.warnings);
    }
    case 'update': {
      const opts = writeOptions(url, 'update', ua);
      const obj = parseBody(req, body, t);
      const updated = ctx.engine.write(t, namespace, r.name, obj, opts, scope, {
        requireVersion: true,
        managed: 'update',
      });
      return send(res, 200, render(t, updated, rendering, url), {}, opts.warnings);
    }
    case 'patch':
      return servePatch(ctx, req, res, url, t, namespace, r.name, scope, body, rendering);
    case 'delete': {
      const opts = deleteOptions(url, body);
      const { object, deleted } = ctx.engine.delete(t, namespace, r.name, opts);
      const orphanFalse = url.searchParams.get('orphanDependents') === 'false';
      const code = !deleted && orphanFalse ? 202 : 200;
      if (deleted && !t.deleteReturnsObject) {
        return send(res, code, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: {
            name: r.name,
            ...(t.group === '' ? {} : { group: t.group }),
            kind: t.resource,
            uid: str(meta(object), 'uid') ?? '',
          },
        });
      }
      return send(res, code, render(t, withTypeMeta(t, object), rendering, url));
    }
    case 'deletecollection': {
      if (!t.verbs.includes('deletecollection')) throw methodNotSupported(g, 'deletecollection');
      const opts = deleteOptions(url, body);
      const pred = predicateFor(url, t);
      const items: JsonValue[] = [];
      for (const { object } of ctx.store.list(
        resourceKey(t),
        t.namespaced ? namespace : undefined,
      )) {
        if (!pred(object)) continue;
        const m = meta(object);
        const { object: gone } = ctx.engine.delete(
          t,
          str(m, 'namespace') ?? '',
          str(m, 'name') ?? '',
          opts,
        );
        items.push(gone);
      }
      return send(res, 200, {
        kind: t.listKind,
        apiVersion: groupVersion(t),
        metadata: { resourceVersion: String(ctx.store.resourceVersion) },
        items,
      });
    }
    default:
      throw methodNotSupported(g, r.verb);
  }
}

function serveList(
  ctx: ServerContext,
  t: ResourceType,
  namespace: string,
  url: URL,
  rendering: Rendering,
  res: ServerResponse,
) {
  const pred = predicateFor(url, t);
  const limitParam = url.searchParams.get('limit');
  const limit = limitParam === null ? 0 : Number(limitParam);
  const cont = url.searchParams.get('continue');
  let rv = ctx.store.resourceVersion;
  let start = '';
  if (cont !== null && cont !== '') {
    const token = decodeContinue(cont);
    if (token.rv < ctx.store.windowStart)
      throw expired(
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
      );
    rv = token.rv;
    start = token.start;
  }
  const all = ctx.store.list(resourceKey(t), t.namespaced ? namespace : undefined);
  const items: JsonObject[] = [];
  let next: string | undefined;
  let remaining = 0;
  let lastKey = '';
  for (const { key, object } of all) {
    if (start !== '' && key <= start) continue;
    if (!pred(object)) continue;
    if (limit > 0 && items.length >= limit) {
      next ??= encodeContinue(rv, lastKey);
      remaining++;
      continue;
    }
    items.push(object);
    lastKey = key;
  }
  const selectors = url.searchParams.has('labelSelector') || url.searchParams.has('fieldSelector');
  const listMeta: JsonObject = {
    resourceVersion: String(rv),
    ...(next === undefined
      ? {}
      : { continue: next, ...(selectors ? {} : { remainingItemCount: remaining }) }),
  };
  if (rendering.as === 'table') {
    return send(
      res,
      200,
      toTable(
        t,
        items.map((o) => withTypeMeta(t, o)),
        listMeta,
        {
          includeObject: parseIncludeObject(url.searchParams.get('includeObject')),
          noHeaders: false,
          apiVersion: rendering.apiVersion,
        },
      ),
    );
  }
  if (rendering.as === 'partial') {
    return send(res, 200, {
      kind: 'PartialObjectMetadataList',
      apiVersion: rendering.apiVersion,
      metadata: listMeta,
      items: items.map((o) => toPartial(o, rendering.apiVersion)),
    });
  }
  const out = t.custom
    ? items.map((o) => withTypeMeta(t, o))
    : items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  return send(res, 200, {
    kind: t.listKind,
    apiVersion: groupVersion(t),
    metadata: listMeta,
    items: out,
  });
}

function servePatch(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  t: ResourceType,
  namespace: string,
  name: string,
  scope: 'main' | 'status',
  body: Buffer,
  rendering: Rendering,
) {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  const accepted = t.custom ? PATCH_TYPES_CUSTOM : PATCH_TYPES_BUILTIN;
  if (!accepted.includes(type)) throw unsupportedMediaType(accepted);
  const opts = writeOptions(url, 'patch', req.headers['user-agent']);
  const forceParam = url.searchParams.get('force');
  if (type === 'application/apply-patch+yaml') {
    if (
      url.searchParams.get('fieldManager') === null ||
      url.searchParams.get('fieldManager') === ''
    )
      throw new StatusError({
        message:
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        reason: 'Invalid',
        details: {
          group: 'meta.k8s.io',
          kind: 'PatchOptions',
          causes: [
            {
              reason: 'FieldValueRequired',
              message: 'Required value: is required for apply patch',
              field: 'fieldManager',
            },
          ],
        },
        code: 422,
      });
    let applied: JsonValue;
    try {
      applied = parseYaml(body.toString('utf8')) as JsonValue;
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!isObject(applied))
      throw badRequest('error decoding YAML: the applied configuration is not an object');
    const existed =
      ctx.store.get(resourceKey(t), t.namespaced ? `${namespace}/${name}` : name) !== undefined;
    const out = ctx.engine.apply(t, namespace, name, applied, opts, scope, forceParam === 'true');
    return send(res, existed ? 200 : 201, render(t, out, rendering, url), {}, opts.warnings);
  }
  if (forceParam !== null)
    throw new StatusError({
      message:
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
      reason: 'Invalid',
      code: 422,
    });
  const current = withTypeMeta(t, ctx.engine.get(t, namespace, name));
  let patch: JsonValue;
  try {
    patch = JSON.parse(body.toString('utf8')) as JsonValue;
  } catch (e) {
    throw badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`);
  }
  let patched: JsonValue | undefined;
  if (type === 'application/json-patch+json') patched = jsonPatch(current, patch);
  else if (type === 'application/merge-patch+json') {
    if (!isObject(patch))
      throw badRequest(
        'json: cannot unmarshal array into Go value of type map[string]interface {}',
      );
    patched = mergePatch(current, patch);
  } else {
    if (!isObject(patch))
      throw badRequest(
        'json: cannot unmarshal array into Go value of type map[string]interface {}',
      );
    patched = strategicMergePatch(current, patch, t.listMapKeys);
  }
  if (!isObject(patched)) throw badRequest('the patched object is not an object');
  const pm = meta(patched);
  if ((str(pm, 'resourceVersion') ?? '') === '')
    pm.resourceVersion = str(meta(current), 'resourceVersion') ?? '';
  const out = ctx.engine.write(t, namespace, name, patched, opts, scope, {
    requireVersion: false,
    managed: 'update',
  });
  return send(res, 200, render(t, withTypeMeta(t, out), rendering, url), {}, opts.warnings);
}
