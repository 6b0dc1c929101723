/**
 * A pool's Proxy as the pool controller reads it: what of its status the
 * pool counts ({@link poolView}, to tell a change that matters), and the
 * {@link Member} the planner takes.
 *
 * @module
 */

import {
  REMEDIATE_ANNOTATION,
  SKIP_REMEDIATION_ANNOTATION,
  TEMPLATE_HASH_LABEL,
} from '../api/pool.js';
import type { ProxyObject, ProxyStatus } from '../api/proxy.js';
import type { Member } from './plan.js';

/** What of a Proxy's status a pool counts, as one string to compare. */
export function poolView(st: ProxyStatus): string {
  const c = (t: string) => {
    const x = st.conditions?.find((k) => k.type === t);
    return x === undefined ? '' : `${x.status}/${x.reason ?? ''}/${x.lastTransitionTime}`;
  };
  return [st.endpoint, st.egressIP, c('Ready'), c('DataPlane'), c('Latched')].join('|');
}

/** A Proxy as the planner sees it. */
export function memberOf(
  p: ProxyObject,
  draining: ReadonlyMap<string, number>,
  paidUntil?: number,
): Member {
  const ready = p.status.conditions?.find((c) => c.type === 'Ready');
  const dataPlane = p.status.conditions?.find((c) => c.type === 'DataPlane');
  const a = p.metadata.annotations ?? {};
  return {
    name: p.metadata.name,
    uid: p.metadata.uid,
    created: Date.parse(p.metadata.creationTimestamp),
    hash: p.metadata.labels?.[TEMPLATE_HASH_LABEL] ?? '',
    provider: p.spec.provider,
    ready: ready?.status === 'True' && p.status.endpoint !== undefined,
    readyChanged: ready === undefined ? undefined : Date.parse(ready.lastTransitionTime),
    // Verified once (a probe passed), whatever the instance says now.
    wasReady: p.status.probe?.lastPassTime !== undefined || dataPlane?.reason === 'ProbeFailed',
    deleting: p.metadata.deletionTimestamp !== undefined,
    drainingUntil: draining.get(p.metadata.name),
    skipRemediation: a[SKIP_REMEDIATION_ANNOTATION] !== undefined,
    remediate: a[REMEDIATE_ANNOTATION] !== undefined,
    latched: p.status.conditions?.some((c) => c.type === 'Latched' && c.status === 'True'),
    // Its backend took its instance back: replaced, not failed.
    preempted: ready?.status === 'False' && ready.reason === 'Preempted',
    ...(paidUntil === undefined ? {} : { paidUntil }),
  };
}
