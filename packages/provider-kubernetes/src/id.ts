/**
 * Provider IDs: `<namespace>/<name>`, the Pod's own key.
 *
 * @module
 */
import { idFormat } from '@proxy-op/contract';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The strict ID format: a namespace and a Pod name, both lowercase DNS labels. */
export const ids = idFormat([':namespace', ':name'], { namespace: DNS_LABEL, name: DNS_LABEL });

/** The parts of a provider ID: the Pod's namespace and name. */
export interface KubernetesId {
  /** The Pod's namespace. */
  readonly namespace: string;
  /** The Pod's name. */
  readonly name: string;
}

/** The provider ID of the Pod `namespace/name`. */
export function formatId(id: KubernetesId): string {
  return ids.format(id);
}

/** The parts of a provider ID, or undefined when it is malformed. */
export function parseId(id: string): KubernetesId | undefined {
  return ids.parse(id);
}
