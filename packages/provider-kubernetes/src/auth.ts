/**
 * UpdateAuth (§4.20, in place): the Pod's password file Secret replaced.
 * The kubelet swaps the mounted directory's files atomically within its
 * sync period, and Squid's `basic_ncsa_auth` reads the file again when it
 * changes: a credential the new file holds is taken without a restart, and
 * one it no longer holds is refused once Squid's `credentialsttl` has run.
 *
 * @module
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { OperationContext, ProxyAuth } from '@proxy-op/contract';
import { KubernetesApiError } from './errors.js';
import type { KubernetesId } from './id.js';
import { podMark } from './labels.js';
import { podRealm } from './pod.js';
import { podMeta, type Runtime } from './runtime.js';
import { ensureAuthSecret } from './secret.js';

/** Writes the new password file of the Pod at `id`. */
export async function updateInstanceAuth(
  rt: Runtime,
  id: KubernetesId,
  auth: ProxyAuth,
  ctx: OperationContext,
): Promise<void> {
  let pod: V1Pod;
  try {
    pod = await rt.seam.readPod(id, ctx.signal);
  } catch (err) {
    if (KubernetesApiError.isInstance(err) && err.status === 404) {
      throw ctx.notFound(`Pod ${id.namespace}/${id.name} does not exist`);
    }
    throw err;
  }
  const meta = podMeta(pod);
  const mark = podMark(meta.labels, meta.creationTimestamp);
  if (mark === undefined) {
    throw ctx.notFound(`Pod ${id.namespace}/${id.name} is not a proxy (it carries no mark)`);
  }
  const realm = podRealm(pod);
  if (realm === undefined) {
    throw ctx.permanent(
      `Pod ${id.namespace}/${id.name} was created without authentication, so its Squid reads no password file; create it again with auth`,
    );
  }
  if (realm !== auth.realm) {
    throw ctx.permanent(
      `Pod ${id.namespace}/${id.name} asks for credentials of realm "${realm}", not "${auth.realm}": a realm is not changed in place; create the proxy again`,
    );
  }
  const outcome = await ensureAuthSecret(
    rt,
    {
      namespace: meta.namespace,
      name: meta.name,
      uid: meta.uid,
      markUid: mark.uid,
      installation: mark.installation,
    },
    auth.passwordFile,
    ctx,
  );
  rt.log.debug({ ...id, outcome }, 'kubernetes password file written');
}
