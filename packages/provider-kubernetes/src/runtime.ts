/**
 * What every operation works with.
 *
 * @module
 */
import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '@proxy-op/contract';
import type { KubernetesConfig } from './config.js';
import type { KubernetesSeam } from './seam.js';

/** The provider's state shared by its operations. */
export interface Runtime {
  readonly config: KubernetesConfig;
  /** The decorated seam: every call a child span and a debug line. */
  readonly seam: KubernetesSeam;
  /** The provider's logger (`provider` field set). */
  readonly log: Logger;
  /** Where the API server is configured, for the Checker's address: stable, never a secret. */
  address(): string;
  /** The API server's URL, once the credentials were read. */
  server(): string | undefined;
}

/**
 * A Pod's metadata, with the fields every answer has checked: an answer
 * without them could not be read (`TypeError`, which the operation shell
 * reports as a malformed answer).
 */
export function podMeta(
  pod: V1Pod,
): V1ObjectMeta & { name: string; namespace: string; uid: string } {
  const m = pod.metadata;
  if (m === undefined || m === null) throw new TypeError('the Pod in the answer has no metadata');
  if (typeof m.name !== 'string' || typeof m.namespace !== 'string' || typeof m.uid !== 'string') {
    throw new TypeError('the Pod in the answer has no name, namespace or uid');
  }
  return m as V1ObjectMeta & { name: string; namespace: string; uid: string };
}

/** The status of a Pod's `Ready` condition, if it reports one. */
export function readyStatus(pod: V1Pod): string | undefined {
  return pod.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}
