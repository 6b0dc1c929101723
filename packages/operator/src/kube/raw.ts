/**
 * Proxies and ProviderHealth as the API server serves them, and what the
 * parts of the Kubernetes store share about them: their paths, which of two
 * copies is newer, and the trimming of fields the operator never reads.
 *
 * @module
 */
import {
  GROUP,
  type OwnerReference,
  type ProviderHealth,
  type ProxyStatus,
  VERSION,
} from '../api/proxy.js';
import { splitKey } from '../store/proxies.js';

/**
 * A Proxy as the API server serves it: plain JSON, so times are strings
 * (client-node's `KubernetesObject` types them as dates, which only its
 * typed APIs' serializer makes them).
 */
export interface RawProxy {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    generation?: number;
    creationTimestamp: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    managedFields?: unknown;
  };
  spec?: unknown;
  status?: ProxyStatus;
}

/** A ProviderHealth as the API server serves it. */
export interface RawHealth {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string> };
  status?: ProviderHealth['status'];
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The collection path of Proxies: of one namespace, or of every namespace. */
export function proxiesPath(namespace: string | undefined): string {
  return namespace === undefined
    ? `/apis/${GROUP}/${VERSION}/proxies`
    : `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/proxies`;
}

/** The path of the Proxy `namespace/name`. */
export function proxyPath(key: string): string {
  const { namespace, name } = splitKey(key);
  return `${proxiesPath(namespace)}/${name}`;
}

/** The collection path of ProviderHealth (cluster-scoped). */
export const HEALTH_PATH = `/apis/${GROUP}/${VERSION}/providerhealths`;

/** `a` is newer than `b` (resourceVersions are compared as integers where both are). */
export function newer(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return false;
}

/**
 * Drops what the operator never reads from a cached object: managedFields
 * and kubectl's last-applied copy of the spec (client-go's informers do the
 * same with a transform). The object is changed in place, so the informer's
 * cache holds the lighter copy.
 */
export function trim<T extends RawProxy | RawHealth>(o: T): T {
  const md = o.metadata as RawProxy['metadata'];
  if (md.managedFields !== undefined) delete md.managedFields;
  if (md.annotations?.[LAST_APPLIED] !== undefined) {
    delete md.annotations[LAST_APPLIED];
    if (Object.keys(md.annotations).length === 0) delete md.annotations;
  }
  return o;
}
