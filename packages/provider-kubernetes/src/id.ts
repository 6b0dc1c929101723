/**
 * Provider IDs: `<namespace>/<name>`, the Pod's own key.
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The strict ID format: a namespace and a Pod name, both lowercase DNS labels. */
export const podIds = idFormat([':namespace', ':name'], { namespace: DNS_LABEL, name: DNS_LABEL });

/** The parts of a provider ID. */
export interface PodId {
  readonly namespace: string;
  readonly name: string;
}

/** The provider ID of the Pod `namespace/name`. */
export function formatId(id: PodId): string {
  return podIds.format(id);
}

/** The parts of a provider ID, or undefined when it is malformed. */
export function parseId(id: string): PodId | undefined {
  return podIds.parse(id);
}
