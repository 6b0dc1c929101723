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
import { isQuotaExceeded, isTlsFailure } from './classify.js';
import { CredentialsError, KubernetesApiError, KubernetesConnectionError } from './errors.js';
import { managedSelector } from './labels.js';
import { buildPod } from './pod.js';
import type { Runtime } from './runtime.js';

/** The Checker's own reasons, besides the contract's shared ones. */
export const KubernetesReason = Object.freeze({
  /** TLS verification of the API server failed: fix the kubeconfig's CA or server name. */
  CertificateInvalid: 'CertificateInvalid',
  /** No kubeconfig, no token file, or not running in a cluster: fix the Secret or the config. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** A ResourceQuota leaves no room for a proxy Pod in the namespace: raise it or free room. */
  QuotaExceeded: 'QuotaExceeded',
} as const);

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
    failed: (err) => {
      const reason = reasonFor(err);
      return reason === undefined ? undefined : { reason, message: (err as Error).message };
    },
  };
}

/** The Checker's reason for a failure it can name; undefined leaves the shell's `APIError`. */
function reasonFor(err: unknown): string | undefined {
  if (CredentialsError.isInstance(err)) return KubernetesReason.CredentialsUnavailable;
  if (KubernetesConnectionError.isInstance(err)) {
    return isTlsFailure(err) ? KubernetesReason.CertificateInvalid : Reason.Unreachable;
  }
  if (KubernetesApiError.isInstance(err)) {
    if (err.status === 401) return Reason.Unauthorized;
    if (isQuotaExceeded(err)) return KubernetesReason.QuotaExceeded;
    if (err.status === 403) return Reason.Forbidden;
  }
  return undefined;
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
  } finally {
    rt.log.debug({ ...d }, 'kubernetes api server checked');
  }
}
