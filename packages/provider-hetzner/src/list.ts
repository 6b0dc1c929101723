/**
 * ListByTag: every server with the managed label (the API's label
 * selector), page by page, filtered on the installation here. A page that
 * fails fails the whole listing (profile `listPartial: fail-whole`). Each
 * server comes with its state and location, read from the same answer.
 *
 * @module
 */
import {
  belongsTo,
  type Instance,
  markedInstances,
  type OperationContext,
} from '@proxy-op/contract';
import { formatId, NAME_RE } from './id.js';
import { MANAGED_SELECTOR, readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import { addressOf, locationOf, mapState } from './state.js';

/** Every server of the project marked for `installation`. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const entries = [];
  for (let page = 1; ; ) {
    const { items, nextPage } = await rt.seam.listServers(MANAGED_SELECTOR, page, ctx.signal);
    for (const server of items) {
      const mark = readMark(server.labels, server.created);
      if (mark === undefined || !belongsTo(mark, installation)) continue;
      // A marked server whose name is no provider ID (made by hand): nothing of ours.
      if (!NAME_RE.test(server.name)) continue;
      entries.push({
        id: formatId({ name: server.name }),
        mark,
        state: mapState(server.status, addressOf(server)),
        location: locationOf(server),
      });
    }
    if (nextPage === undefined) break;
    if (nextPage <= page)
      throw new TypeError(`page ${page} of the listing points back to ${nextPage}`);
    page = nextPage;
  }
  return markedInstances(installation, entries);
}
