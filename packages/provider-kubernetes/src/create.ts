/**
 * Create: everything is resolved and checked before the first request;
 * then the Pod is read, and created when there is none (one write). A Pod
 * that already has the name is adopted only when its mark is this Proxy's.
 * A request with credentials gets the password file's Secret after the
 * Pod, owned by it: no Secret is ever left without its Pod, and a retried
 * Create finds the Pod and completes the Secret.
 *
 * @module
 */

import type { V1Pod } from '@kubernetes/client-node';
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type OperationContext,
  requireOneOf,
} from '@proxy-op/contract';
import { withPrefix } from '@proxy-op/squid-config';
import { PROXY_RESOURCE } from './client.js';
import { KubernetesApiError } from './errors.js';
import { formatId } from './id.js';
import { labelValueProblem, podMark } from './labels.js';
import { buildPod, type PodOwner, type PodPlan, podRealm } from './pod.js';
import { podMeta, type Runtime } from './runtime.js';
import { ensureAuthSecret, type SecretOwner } from './secret.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The Pod's plan from the request and the config: placement (zone,
 * machine type, image), the namespace, the allowed sources and the label
 * values, each refused as Permanent naming what to fix.
 */
export function resolvePlan(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Omit<PodPlan, 'owner'> {
  const c = rt.config;
  const p = req.placement;
  if (p.region !== undefined && p.region !== '') {
    throw ctx.permanent(
      `placement.region "${p.region}" is not used by the kubernetes provider; leave it empty and pick a zone`,
    );
  }
  let zone: string | undefined;
  if (p.zone !== undefined && p.zone !== '') {
    zone = requireOneOf(ctx.provider, 'placement.zone', p.zone, c.zones, 'kubernetes.zones');
  }
  const machineType = requireOneOf(
    ctx.provider,
    'placement.machineType',
    p.machineType,
    Object.keys(c.machineTypes),
    'kubernetes.machineTypes',
  );
  const image = requireOneOf(
    ctx.provider,
    'placement.image',
    p.image,
    Object.keys(c.images),
    'kubernetes.images',
  );
  const namespace = c.namespace ?? req.namespace;
  if (!DNS_LABEL.test(namespace)) {
    throw ctx.permanent(`namespace "${namespace}" is not a namespace name (a lowercase DNS label)`);
  }
  const uidProblem = labelValueProblem(req.uid);
  if (uidProblem !== undefined) {
    throw ctx.permanent(`uid "${req.uid}" ${uidProblem}: it goes into the Pod's labels`);
  }
  const allowedSources = (req.allowedSources ?? c.allowedSources).map(withPrefix);
  if (allowedSources.length === 0) {
    throw ctx.permanent(
      `the request for ${req.name} names no allowedSources and kubernetes.allowedSources is empty: the proxy would serve nobody`,
    );
  }
  return {
    namespace,
    name: req.name,
    uid: req.uid,
    installation: req.installation,
    port: req.port,
    allowedSources,
    connectPorts: c.connectPorts,
    image: c.images[image]!,
    machineType: c.machineTypes[machineType]!,
    zone,
    imagePullSecrets: c.imagePullSecrets,
    ...(req.auth === undefined
      ? {}
      : { auth: { realm: req.auth.realm, credentialsTtlSeconds: c.credentialsTtlSeconds } }),
    ...(req.egress === undefined ? {} : { egress: req.egress }),
  };
}

/** The Proxy that owns the Pod, found by its UID among the Proxies of its namespace. */
async function findOwner(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<PodOwner> {
  const proxies = await rt.seam.listProxies({ namespace: req.namespace }, ctx.signal);
  const owner = proxies.find((p) => p.uid === req.uid);
  if (owner === undefined) {
    throw ctx.permanent(
      `no Proxy with UID ${req.uid} in namespace ${req.namespace}: kubernetes.ownerReferences is on, so the Proxies must live in the cluster the Pods go to`,
    );
  }
  return {
    apiVersion: `${PROXY_RESOURCE.group}/${PROXY_RESOURCE.version}`,
    kind: PROXY_RESOURCE.kind,
    name: owner.name,
    uid: owner.uid,
  };
}

/** Creates the Pod, or adopts the one of this Proxy that has the name. */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const plan = resolvePlan(rt, req, ctx);
  const at = { namespace: plan.namespace, name: plan.name };
  rt.log.trace(
    {
      ...at,
      port: plan.port,
      zone: plan.zone,
      image: plan.image.image,
      allowedSources: plan.allowedSources,
      cloudInitBytes: req.cloudInit.byteLength,
      auth: req.auth !== undefined,
      egress: req.egress !== undefined,
    },
    'kubernetes create resolved',
  );
  // Read first: a create of a Pod that exists runs admission before the store says
  // AlreadyExists, so in a namespace whose quota is full it would be refused as
  // QuotaExceeded instead of adopted.
  const existing = await readIfExists(rt, at, ctx);
  if (existing !== undefined) return adopt(rt, existing, req, ctx);
  const owner = rt.config.ownerReferences ? await findOwner(rt, req, ctx) : undefined;
  const pod = buildPod({ ...plan, owner });
  let created: ReturnType<typeof podMeta>;
  try {
    created = podMeta(await rt.seam.createPod(at, pod, ctx.signal));
  } catch (err) {
    if (
      !(KubernetesApiError.isInstance(err) && err.status === 409 && err.reason === 'AlreadyExists')
    ) {
      throw err;
    }
    // Created meanwhile (an earlier attempt's create, carried out after its caller gave up).
    return adopt(rt, await rt.seam.readPod(at, ctx.signal), req, ctx);
  }
  if (created.name !== plan.name || created.namespace !== plan.namespace) {
    throw new TypeError(`the create answered with Pod ${created.namespace}/${created.name}`);
  }
  rt.log.debug({ ...at, podUID: created.uid }, 'kubernetes pod created');
  if (req.auth !== undefined) {
    await ensureAuthSecret(rt, secretOwner(created, req), req.auth.passwordFile, ctx, true);
  }
  return formatId(at);
}

/** The Pod as the owner of its Secret. */
function secretOwner(pod: ReturnType<typeof podMeta>, req: CheckedCreateRequest): SecretOwner {
  return {
    namespace: pod.namespace,
    name: pod.name,
    uid: pod.uid,
    markUid: req.uid,
    installation: req.installation,
  };
}

async function readIfExists(
  rt: Runtime,
  at: { namespace: string; name: string },
  ctx: OperationContext,
): Promise<V1Pod | undefined> {
  try {
    const pod = await rt.seam.readPod(at, ctx.signal);
    podMeta(pod);
    return pod;
  } catch (err) {
    if (KubernetesApiError.isInstance(err) && err.status === 404) return undefined;
    throw err;
  }
}

/**
 * Adopts an existing Pod when its mark is this Proxy's; anything else is
 * Permanent. A Pod whose Squid asks for other credentials than the request
 * (none where the request has some, or the other way round, or another
 * realm) cannot change in place: it is deleted, and Create is Transient
 * until it is gone and can be made again, so a proxy never goes on
 * serving on terms the request did not ask for.
 */
async function adopt(
  rt: Runtime,
  pod: V1Pod,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  const existing = podMeta(pod);
  const at = { namespace: existing.namespace, name: existing.name };
  const problem = adoptionProblem(podMark(existing.labels, existing.creationTimestamp), {
    uid: req.uid,
    installation: req.installation,
  });
  if (problem !== undefined) {
    throw ctx.permanent(
      `Pod ${at.namespace}/${at.name} exists and is not this Proxy's: ${problem}`,
    );
  }
  if (existing.deletionTimestamp !== undefined && existing.deletionTimestamp !== null) {
    throw ctx.transient(
      `Pod ${at.namespace}/${at.name} is being deleted; it is created again once it is gone`,
    );
  }
  if (podRealm(pod) !== req.auth?.realm) {
    await rt.seam.deletePod(at, existing.uid, ctx.signal);
    rt.log.debug({ ...at, podUID: existing.uid }, 'kubernetes pod replaced for its credentials');
    throw ctx.transient(
      `Pod ${at.namespace}/${at.name} asks for other credentials than the request (${req.auth === undefined ? 'none' : 'a password file'}); it is being deleted and is created again once it is gone`,
    );
  }
  if (req.auth !== undefined) {
    await ensureAuthSecret(rt, secretOwner(existing, req), req.auth.passwordFile, ctx);
  }
  rt.log.debug({ ...at, podUID: existing.uid, adopted: true }, 'kubernetes pod adopted');
  return formatId(at);
}
