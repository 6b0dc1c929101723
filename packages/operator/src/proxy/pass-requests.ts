/**
 * What the reconcile pass asks of a provider about a Proxy's instances
 * beyond the steps themselves: the Create request of an instance (the
 * Proxy's own, or a rotation's successor), and the deletion of the
 * instances a make-before-break rotation holds beside the Proxy's own.
 *
 * @module
 */
import type { CreateRequest, ProxyAuth } from '@proxy-op/contract';
import type { ProxyObject } from '../api/proxy.js';
import { clearSides, sideInstances } from '../credentials/successor.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import type { MutableStatus } from './status-draft.js';

/** The Create request of an instance named `name` for the Proxy `obj`. */
export function createRequestOf(
  obj: ProxyObject,
  installation: string,
  name: string,
  cloudInit: string,
  auth: ProxyAuth | undefined,
): CreateRequest {
  const { metadata: md, spec: s } = obj;
  return {
    name,
    namespace: md.namespace,
    uid: md.uid,
    port: s.port,
    cloudInit: new TextEncoder().encode(cloudInit),
    placement: s.placement,
    allowedSources: s.allowedSources,
    installation,
    auth,
  };
}

/**
 * Deletes a rotation's successor and retiring instance (`auth/successor.ts`);
 * true once both are gone (then forgotten), false while a deletion is under
 * way or the provider of one is not configured.
 */
export async function deleteSideInstances(
  st: MutableStatus,
  holder: string,
  providers: ProviderSet,
  del: (cp: ConfiguredProvider, id: string) => Promise<boolean>,
): Promise<boolean> {
  let gone = true;
  for (const side of sideInstances(st, holder)) {
    const cp = providers.get(side.provider);
    if (cp === undefined || !(await del(cp, side.providerID))) gone = false;
  }
  if (gone) clearSides(st);
  return gone;
}
