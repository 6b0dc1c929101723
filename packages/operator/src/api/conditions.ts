/**
 * Status conditions with Kubernetes' rule: `lastTransitionTime` changes only
 * when a condition's status does.
 *
 * @module
 */
import type { Condition, ConditionType } from './proxy.js';

/** A condition whose type is one of `T` (a Proxy's, a pool's). */
export type TypedCondition<T extends string> = Omit<Condition, 'type'> & { type: T };

/**
 * Sets condition `type` in `conditions` (a new array is returned). The
 * transition time is kept while the status stays the same; reason and
 * message are updated in place.
 */
export function setCondition<T extends string = ConditionType>(
  conditions: readonly TypedCondition<T>[] | undefined,
  next: {
    type: T;
    status: Condition['status'];
    reason: string;
    message: string;
    observedGeneration?: number | undefined;
  },
  now: Date,
): TypedCondition<T>[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const old = i >= 0 ? list[i] : undefined;
  const c: TypedCondition<T> = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime:
      old !== undefined && old.status === next.status ? old.lastTransitionTime : now.toISOString(),
  };
  if (next.observedGeneration !== undefined) c.observedGeneration = next.observedGeneration;
  if (i >= 0) list[i] = c;
  else list.push(c);
  return list;
}

/** The condition `type`, if present. */
export function getCondition(
  conditions: readonly Condition[] | undefined,
  type: ConditionType,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
