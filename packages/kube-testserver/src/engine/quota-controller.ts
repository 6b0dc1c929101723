/**
 * The ResourceQuota controller: `status.hard` and `status.used` of each
 * quota recalculated from the pods of its namespace.
 *
 * @module
 */
import { clone, meta, str } from '../json.js';
import { quotaStatus } from '../quota.js';
import type { Store } from '../store.js';
import { POD_KEY, QUOTA_KEY } from './objects.js';

/** The quota controller for one namespace (all when undefined): status.hard and status.used; true when one changed. */
export function updateQuotas(store: Store, namespace?: string): boolean {
  let changed = false;
  const now = Date.now();
  for (const { key, object } of store.list(QUOTA_KEY, namespace)) {
    const ns = str(meta(object), 'namespace') ?? '';
    const pods = store.list(POD_KEY, ns).map((e) => e.object);
    const status = quotaStatus(object, pods, now);
    if (JSON.stringify(status) === JSON.stringify(object.status ?? null)) continue;
    const next = clone(object);
    next.status = status;
    store.put(QUOTA_KEY, key, next);
    changed = true;
  }
  return changed;
}
