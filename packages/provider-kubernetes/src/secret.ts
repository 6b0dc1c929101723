/**
 * A proxy's password file as a Secret: one `Opaque` Secret per Pod with
 * the one key `passwd`, owned by the Pod (so the garbage collector removes
 * it with the Pod) and carrying the Pod's mark. The Pod mounts it as a
 * directory, so the kubelet's atomic update of the mount reaches the
 * running Squid when the Secret changes.
 *
 * The password file's bytes go into the Secret and nowhere else: never
 * into a log line, a span or an error.
 *
 * @module
 */
import type { V1Secret } from '@kubernetes/client-node';
import { adoptionProblem, type OperationContext } from '@proxy-op/contract';
import { KubernetesApiError } from './errors.js';
import { APP_LABELS, markLabels, podMark } from './labels.js';
import type { Runtime } from './runtime.js';
import type { Target } from './seam.js';

/** The key of the Secret that holds the password file. */
export const AUTH_SECRET_KEY = 'passwd';
/** What the Secret's name adds to its Pod's. */
export const AUTH_SECRET_SUFFIX = '-auth';

/** The name of the Secret of the Pod `podName`. */
export function authSecretName(podName: string): string {
  return `${podName}${AUTH_SECRET_SUFFIX}`;
}

/** The Pod a Secret belongs to: where it is, its own UID, and its mark (the Proxy's). */
export interface SecretOwner {
  readonly namespace: string;
  readonly name: string;
  /** The Pod's UID, for the OwnerReference. */
  readonly uid: string;
  /** The mark's UID (the Proxy's). */
  readonly markUid: string;
  readonly installation: string;
}

/** The Secret of `owner` holding `passwordFile`. The same input always gives the same object. */
export function buildAuthSecret(owner: SecretOwner, passwordFile: Uint8Array): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: authSecretName(owner.name),
      namespace: owner.namespace,
      labels: {
        ...APP_LABELS,
        ...markLabels(owner.markUid, owner.installation),
        'app.kubernetes.io/component': 'proxy-auth',
      },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Pod', name: owner.name, uid: owner.uid, controller: true },
      ],
    },
    data: { [AUTH_SECRET_KEY]: Buffer.from(passwordFile).toString('base64') },
  };
}

function status(err: unknown, code: number, reason?: string): boolean {
  return (
    KubernetesApiError.isInstance(err) &&
    err.status === code &&
    (reason === undefined || err.reason === reason)
  );
}

async function readIfExists(
  rt: Runtime,
  at: Target,
  ctx: OperationContext,
): Promise<V1Secret | undefined> {
  try {
    return await rt.seam.readSecret(at, ctx.signal);
  } catch (err) {
    if (status(err, 404)) return undefined;
    throw err;
  }
}

/** What {@link ensureAuthSecret} did. */
export type SecretOutcome = 'created' | 'replaced' | 'unchanged';

/**
 * Makes the Secret of `owner` hold `passwordFile`, owned by that very Pod:
 * creates it when there is none, replaces it (with its resourceVersion, so
 * a concurrent write fails as a Transient 409) when it holds another file
 * or belongs to an earlier Pod of the name, and leaves it alone when it is
 * already right. A Secret with the name whose mark is not the Pod's is
 * Permanent. `fresh` (a Pod just created) tries the create first, saving
 * the read.
 */
export async function ensureAuthSecret(
  rt: Runtime,
  owner: SecretOwner,
  passwordFile: Uint8Array,
  ctx: OperationContext,
  fresh = false,
): Promise<SecretOutcome> {
  const at = { namespace: owner.namespace, name: authSecretName(owner.name) };
  const want = buildAuthSecret(owner, passwordFile);
  for (let round = 0; ; round++) {
    const existing = fresh && round === 0 ? undefined : await readIfExists(rt, at, ctx);
    if (existing === undefined) {
      try {
        await rt.seam.createSecret(at, want, ctx.signal);
        rt.log.debug({ ...at, podUID: owner.uid }, 'kubernetes secret created');
        return 'created';
      } catch (err) {
        // Made meanwhile (an earlier attempt's create carried out late): read it, once.
        if (round > 0 || !status(err, 409, 'AlreadyExists')) throw err;
        continue;
      }
    }
    const meta = existing.metadata ?? {};
    const problem = adoptionProblem(podMark(meta.labels, meta.creationTimestamp), {
      uid: owner.markUid,
      installation: owner.installation,
    });
    if (problem !== undefined) {
      throw ctx.permanent(
        `Secret ${at.namespace}/${at.name} exists and is not this proxy's: ${problem}`,
      );
    }
    const owned = (meta.ownerReferences ?? []).some((r) => r.uid === owner.uid);
    if (owned && existing.data?.[AUTH_SECRET_KEY] === want.data?.[AUTH_SECRET_KEY]) {
      return 'unchanged';
    }
    await rt.seam.replaceSecret(
      at,
      {
        ...want,
        metadata: {
          ...want.metadata,
          ...(meta.resourceVersion === undefined ? {} : { resourceVersion: meta.resourceVersion }),
        },
      },
      ctx.signal,
    );
    rt.log.debug({ ...at, podUID: owner.uid, adopted: !owned }, 'kubernetes secret replaced');
    return 'replaced';
  }
}
