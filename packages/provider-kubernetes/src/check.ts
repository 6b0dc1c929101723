/**
 * The Checker: one target, the API server. Three requests: `/version`, a
 * one-item Pod listing where the provider lists, and a dry-run Pod create
 * where it creates (RBAC, admission and quotas all run; nothing is stored).
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  type ImplementationChecker,
  Reason,
} from '@proxy-op/contract';
import { reasonFor } from './classify.js';
import { managedSelector } from './labels.js';
import { buildPod } from './pod.js';
import type { Runtime } from './runtime.js';

/** The name of the Pod the Checker's dry-run create names. */
export const CHECK_POD_NAME = 'proxy-op-check';

/** The Checker over `rt`. */
export function checker(rt: Runtime): ImplementationChecker {
  const c = rt.config;
  return {
    targets: (): CheckTarget[] => [
      {
        target: 'apiserver',
        address: rt.address(),
        details: { namespace: c.namespace ?? '(each Proxy namespace)' },
      },
    ],
    check: (_target, ctx) => checkApiServer(rt, ctx),
  };
}

async function checkApiServer(rt: Runtime, ctx: CheckContext): Promise<CheckAnswer> {
  const c = rt.config;
  const d = ctx.details;
  const createIn = c.namespace ?? c.checkNamespace;
  try {
    const version = await rt.seam.version(ctx.signal);
    d.server = rt.server() ?? '';
    d.serverVersion = version.gitVersion;
    await rt.seam.listPods(
      { namespace: c.namespace, labelSelector: managedSelector('default'), limit: 1 },
      ctx.signal,
    );
    d.listPods = c.namespace === undefined ? 'all namespaces' : c.namespace;
    const image = Object.values(c.images)[0]!;
    const machineType = Object.values(c.machineTypes)[0]!;
    const probe = buildPod({
      namespace: createIn,
      name: CHECK_POD_NAME,
      uid: 'check',
      installation: 'default',
      port: 3128,
      allowedSources: c.allowedSources.length > 0 ? c.allowedSources : ['127.0.0.1/32'],
      connectPorts: c.connectPorts,
      image,
      machineType,
      imagePullSecrets: c.imagePullSecrets,
    });
    await rt.seam.dryRunCreatePod({ namespace: createIn }, probe, ctx.signal);
    d.createPods = createIn;
    return {
      reason: Reason.Reachable,
      message: `the API server answers; Pods can be listed and created`,
    };
  } catch (err) {
    return {
      reason: reasonFor(err, ctx.signal.aborted),
      message: err instanceof Error ? err.message : 'check failed',
    };
  } finally {
    rt.log.debug({ ...d }, 'kubernetes api server checked');
  }
}
