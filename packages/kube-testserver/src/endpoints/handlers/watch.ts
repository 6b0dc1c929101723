/**
 * The watch handler: one JSON event a line over a held-open response,
 * with bookmarks, a timeout and 410 for a version the history no longer
 * holds (the real server's `handlers/watch.go`).
 *
 * @module
 */
import type { ServerResponse } from 'node:http';
import { StatusError } from '../../errors.js';
import { isObject, type JsonObject } from '../../json.js';
import { groupVersion, type ResourceType, resourceKey } from '../../resource-type.js';
import type { Predicate } from '../../selectors.js';
import type { Store, StoreEvent } from '../../store.js';
import { type IncludeObject, toTable } from '../../table.js';

/** How a watch was asked for. */
export interface WatchRequest {
  readonly type: ResourceType;
  readonly namespace: string;
  readonly predicate: Predicate;
  /** `resourceVersion`: '' or '0' start with the current state as ADDED events. */
  readonly resourceVersion: string;
  readonly timeoutSeconds: number | undefined;
  readonly allowBookmarks: boolean;
  readonly sendInitialEvents: boolean;
  readonly table: { includeObject: IncludeObject } | undefined;
}

/** An open watch, so tests can drop it. */
export interface OpenWatch {
  /** Ends the stream as a server timeout does (the client sees a clean end). */
  end(): void;
  /** Destroys the connection (the client sees an error). */
  destroy(): void;
}

function inNamespace(o: JsonObject, ns: string): boolean {
  return ns === '' || (isObject(o.metadata) && o.metadata.namespace === ns);
}

/**
 * Serves one watch as the real server does: headers flushed at once, one
 * JSON event per line, a 410 `ERROR` event for a version older than the
 * retained history, bookmarks only when asked, and an end after
 * `timeoutSeconds`.
 */
export function serveWatch(
  store: Store,
  req: WatchRequest,
  res: ServerResponse,
  opts: { bookmarkIntervalMs: number; open: Set<OpenWatch>; headers: Record<string, string> },
): void {
  const t = req.type;
  const key = resourceKey(t);
  const apiVersion = groupVersion(t);
  let headersSent = false;
  const matches = (o: JsonObject | undefined) =>
    o !== undefined && inNamespace(o, req.namespace) && req.predicate(o);
  const render = (o: JsonObject): JsonObject => {
    const obj = { ...o, apiVersion, kind: t.kind };
    if (req.table === undefined) return obj;
    const table = toTable(
      t,
      [obj],
      { resourceVersion: String((o.metadata as JsonObject).resourceVersion ?? '') },
      {
        includeObject: req.table.includeObject,
        noHeaders: headersSent,
      },
    );
    headersSent = true;
    return table;
  };
  const write = (type: string, object: JsonObject) => {
    res.write(`${JSON.stringify({ type, object })}\n`);
  };
  res.writeHead(200, {
    ...opts.headers,
    'Content-Type': 'application/json',
    'Transfer-Encoding': 'chunked',
  });
  res.flushHeaders();

  const backlog: StoreEvent[] = [];
  if (req.resourceVersion === '' || req.resourceVersion === '0' || req.sendInitialEvents) {
    for (const { object } of store.list(key, t.namespaced ? req.namespace : undefined))
      if (matches(object)) write('ADDED', render(object));
    if (req.sendInitialEvents && req.allowBookmarks)
      write('BOOKMARK', {
        kind: t.kind,
        apiVersion,
        metadata: {
          resourceVersion: String(store.resourceVersion),
          creationTimestamp: null,
          annotations: { 'k8s.io/initial-events-end': 'true' },
        },
      });
  } else {
    const rv = Number(req.resourceVersion);
    try {
      if (!Number.isInteger(rv) || rv < 0)
        throw new StatusError({
          message: `invalid resource version: ${req.resourceVersion}`,
          reason: 'BadRequest',
          code: 400,
        });
      backlog.push(...store.since(key, rv));
    } catch (e) {
      if (!(e instanceof StatusError)) throw e;
      write('ERROR', e.status as unknown as JsonObject);
      res.end();
      return;
    }
  }
  const deliver = (e: StoreEvent) => {
    if (e.resource !== key) return;
    const now = e.type === 'DELETED' ? undefined : e.object;
    const was = e.type === 'ADDED' ? undefined : e.previous;
    const before = matches(was);
    const after = matches(now);
    if (e.type === 'DELETED') {
      if (before) write('DELETED', render(e.object));
    } else if (after && before) write('MODIFIED', render(e.object));
    else if (after) write('ADDED', render(e.object));
    else if (before) write('DELETED', render(e.object));
  };
  for (const e of backlog) deliver(e);
  const unsubscribe = store.subscribe(deliver);
  const timers: NodeJS.Timeout[] = [];
  if (req.allowBookmarks) {
    timers.push(
      setInterval(() => {
        write('BOOKMARK', {
          kind: t.kind,
          apiVersion,
          metadata: { resourceVersion: String(store.resourceVersion), creationTimestamp: null },
        });
      }, opts.bookmarkIntervalMs),
    );
  }
  const handle: OpenWatch = {
    end: () => {
      cleanup();
      res.end();
    },
    destroy: () => {
      cleanup();
      res.destroy();
    },
  };
  if (req.timeoutSeconds !== undefined)
    timers.push(setTimeout(handle.end, req.timeoutSeconds * 1000));
  let cleaned = false;
  function cleanup() {
    if (cleaned) return;
    cleaned = true;
    unsubscribe();
    for (const timer of timers) clearTimeout(timer);
    opts.open.delete(handle);
  }
  opts.open.add(handle);
  res.on('close', cleanup);
}
