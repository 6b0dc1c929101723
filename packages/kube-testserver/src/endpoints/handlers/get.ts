/**
 * The read handlers (the real server's `handlers/get.go`): get one object,
 * list a collection in pages with `limit` and `continue`, and watch it.
 *
 * @module
 */
import { badRequest, expired } from '../../errors.js';
import type { JsonObject } from '../../json.js';
import { groupVersion, resourceKey } from '../../resource-type.js';
import { parseIncludeObject, toPartial, toTable } from '../../table.js';
import { commonHeaders, writeJson } from '../responsewriters.js';
import { predicateFor, type ResourceRequest, render, withTypeMeta } from './rest.js';
import { serveWatch } from './watch.js';

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

/** GET of one object. */
export function getResource(r: ResourceRequest): void {
  const { ctx, type: t } = r;
  const o = ctx.engine.get(t, r.namespace, r.name);
  writeJson(r.res, 200, render(r, withTypeMeta(t, o)));
}

/** GET of a collection: selectors, pages with `limit`/`continue` (410 once the history is gone), rendered as negotiated. */
export function listResource(r: ResourceRequest) {
  const { ctx, type: t, url, rendering, res } = r;
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
  const all = ctx.store.list(resourceKey(t), t.namespaced ? r.namespace : undefined);
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
    return writeJson(
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
    return writeJson(res, 200, {
      kind: 'PartialObjectMetadataList',
      apiVersion: rendering.apiVersion,
      metadata: listMeta,
      items: items.map((o) => toPartial(o, rendering.apiVersion)),
    });
  }
  const out = t.custom
    ? items.map((o) => withTypeMeta(t, o))
    : items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  return writeJson(res, 200, {
    kind: t.listKind,
    apiVersion: groupVersion(t),
    metadata: listMeta,
    items: out,
  });
}

/** GET with `watch=true`: the stream stays open until its timeout, the client, or the server ends it. */
export function watchResource(r: ResourceRequest): void {
  const { ctx, type: t, url, rendering } = r;
  serveWatch(
    ctx.store,
    {
      type: t,
      namespace: r.namespace,
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
    r.res,
    {
      bookmarkIntervalMs: ctx.bookmarkIntervalMs,
      open: ctx.openWatches,
      headers: commonHeaders(),
    },
  );
}
