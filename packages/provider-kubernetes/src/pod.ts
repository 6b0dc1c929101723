/**
 * The proxy Pod, built as a pure function of what Create resolved: one
 * object per proxy, carrying its own Squid configuration (an annotation
 * projected into a file by a downward API volume), its ownership mark in
 * labels, and a hardened container. A proxy with credentials also mounts
 * its password file's Secret (`secret.ts`) as a directory.
 *
 * @module
 */
import { posix } from 'node:path';
import type { V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { type CreateRequest, type Location, locationProblems } from '@proxy-op/contract';
import { CONTAINER_PASSWORD_FILE, renderSquidConfig } from '@proxy-op/squid-config';
import type { ImageEntry, MachineTypeEntry } from './config.js';
import { APP_LABELS, markLabels } from './labels.js';
import { AUTH_SECRET_KEY, authSecretName } from './secret.js';

/** The annotation that holds the Pod's Squid configuration. */
export const SQUID_CONF_ANNOTATION = 'proxy-op.io/squid.conf';
/** Where the configuration file appears in the container. */
export const SQUID_CONF_DIR = '/etc/squid-proxy-op';
/** The node label a zone is matched against. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** The Squid container's name. */
export const CONTAINER_NAME = 'squid';
/** The volume of the password file's Secret. */
export const AUTH_VOLUME = 'squid-auth';
/** The password file's mode: the owner and the Pod's `fsGroup` (Squid's group) read it. */
export const AUTH_FILE_MODE = 0o440;
/** How long a Pod has to stop after a delete, in seconds (Squid is told 3 s). */
export const TERMINATION_GRACE_SECONDS = 10;

/** The writable places Squid gets, as memory-backed emptyDirs on a read-only root. */
export const SCRATCH_VOLUMES: readonly { readonly name: string; readonly mountPath: string }[] =
  Object.freeze([
    { name: 'squid-run', mountPath: '/run/squid' },
    { name: 'squid-spool', mountPath: '/var/spool/squid' },
    { name: 'tmp', mountPath: '/tmp' },
  ]);

/** The Proxy a Pod is owned by, when OwnerReferences are on. */
export interface PodOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** How a proxy with credentials asks for them; the password file itself is the Secret's. */
export interface PodAuth {
  /** The realm of the proxy's challenge. */
  readonly realm: string;
  /** Squid's `credentialsttl`, in seconds. */
  readonly credentialsTtlSeconds: number;
}

/** Everything a proxy Pod is made from, resolved and checked by Create. */
export interface PodPlan {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly installation: string;
  readonly port: number;
  readonly allowedSources: readonly string[];
  readonly connectPorts: readonly number[];
  readonly image: ImageEntry;
  readonly machineType: MachineTypeEntry;
  readonly zone?: string | undefined;
  readonly imagePullSecrets: readonly string[];
  readonly owner?: PodOwner | undefined;
  /** Basic authentication; sources only when unset. */
  readonly auth?: PodAuth | undefined;
  /**
   * The request's destination policy; Squid's rendering of the safe
   * defaults when unset. Its `connectPorts`, when given, take the place of
   * the provider's `connectPorts`.
   */
  readonly egress?: CreateRequest['egress'];
}

/** The Secret volume and its mount, for a Pod with credentials. */
function authVolume(plan: PodPlan): { volume: V1Volume; mount: V1VolumeMount } | undefined {
  if (plan.auth === undefined) return undefined;
  return {
    volume: {
      name: AUTH_VOLUME,
      secret: {
        secretName: authSecretName(plan.name),
        defaultMode: AUTH_FILE_MODE,
        items: [{ key: AUTH_SECRET_KEY, path: posix.basename(CONTAINER_PASSWORD_FILE) }],
      },
    },
    // The whole directory, never a subPath: only a directory mount follows the kubelet's
    // atomic swap when the Secret changes.
    mount: { name: AUTH_VOLUME, mountPath: posix.dirname(CONTAINER_PASSWORD_FILE), readOnly: true },
  };
}

/** The realm a Pod's Squid asks credentials for, or undefined for a Pod without credentials. */
export function podRealm(pod: V1Pod): string | undefined {
  if (!(pod.spec?.volumes ?? []).some((v) => v.name === AUTH_VOLUME)) return undefined;
  const conf = pod.metadata?.annotations?.[SQUID_CONF_ANNOTATION] ?? '';
  return /^auth_param basic realm (.*)$/m.exec(conf)?.[1] ?? '';
}

/**
 * Where a Pod runs, from the Pod alone: the zone its required node
 * affinity pins it to (`topology.kubernetes.io/zone In [zone]` in every
 * node selector term, as a Create with `placement.zone` writes it), so the
 * scheduler places it on no node outside that zone. Undefined for a Pod
 * that may run in any zone, or in more than one. Nodes are never read:
 * the provider's Role grants no access to them.
 */
export function podLocation(pod: V1Pod): Location | undefined {
  const terms: unknown =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) return undefined;
  const zones = new Set<unknown>();
  for (const term of terms as unknown[]) {
    const exprs: unknown = (term as { matchExpressions?: unknown } | null)?.matchExpressions;
    const pinned = Array.isArray(exprs)
      ? (exprs as unknown[]).flatMap((e) => {
          const x = e as { key?: unknown; operator?: unknown; values?: unknown } | null;
          return x?.key === ZONE_LABEL &&
            x.operator === 'In' &&
            Array.isArray(x.values) &&
            x.values.length === 1
            ? [x.values[0] as unknown]
            : [];
        })
      : [];
    // A term without a one-zone requirement lets the Pod run anywhere that term allows.
    if (pinned.length !== 1) return undefined;
    zones.add(pinned[0]);
  }
  const [zone] = zones;
  if (zones.size !== 1 || typeof zone !== 'string') return undefined;
  return locationProblems({ zone }).length === 0 ? { zone } : undefined;
}

/** The proxy Pod for a plan. The same plan always gives the same object. */
export function buildPod(plan: PodPlan): V1Pod {
  const squidConf = renderSquidConfig({
    port: plan.port,
    allowedSources: plan.allowedSources,
    ...(plan.egress?.connectPorts === undefined ? { connectPorts: plan.connectPorts } : {}),
    ...(plan.egress === undefined ? {} : { egress: plan.egress }),
    ...(plan.auth === undefined
      ? {}
      : {
          auth: {
            realm: plan.auth.realm,
            passwordFile: CONTAINER_PASSWORD_FILE,
            credentialsTtlSeconds: plan.auth.credentialsTtlSeconds,
          },
        }),
  });
  const auth = authVolume(plan);
  const { machineType: m, image } = plan;
  const limits: Record<string, string> = { memory: m.memory };
  if (m.cpuLimit !== undefined) limits.cpu = m.cpuLimit;
  const probe = { tcpSocket: { port: plan.port } };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: plan.name,
      namespace: plan.namespace,
      labels: { ...APP_LABELS, ...markLabels(plan.uid, plan.installation) },
      annotations: { [SQUID_CONF_ANNOTATION]: squidConf },
      ...(plan.owner === undefined
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: plan.owner.apiVersion,
                kind: plan.owner.kind,
                name: plan.owner.name,
                uid: plan.owner.uid,
                controller: true,
              },
            ],
          }),
    },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: image.runAsUser,
        runAsGroup: image.runAsGroup,
        seccompProfile: { type: 'RuntimeDefault' },
        // The password file's group: Squid reads it, nobody else does.
        ...(auth === undefined ? {} : { fsGroup: image.runAsGroup }),
      },
      ...(plan.zone === undefined
        ? {}
        : {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [{ key: ZONE_LABEL, operator: 'In', values: [plan.zone] }],
                    },
                  ],
                },
              },
            },
          }),
      ...(plan.imagePullSecrets.length === 0
        ? {}
        : { imagePullSecrets: plan.imagePullSecrets.map((name) => ({ name })) }),
      containers: [
        {
          name: CONTAINER_NAME,
          image: image.image,
          ...(image.pullPolicy === undefined ? {} : { imagePullPolicy: image.pullPolicy }),
          command: [image.squidPath, '-N', '-f', `${SQUID_CONF_DIR}/squid.conf`],
          ports: [{ name: 'proxy', containerPort: plan.port, protocol: 'TCP' }],
          resources: { requests: { cpu: m.cpu, memory: m.memory }, limits },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ['ALL'] },
          },
          readinessProbe: { ...probe, periodSeconds: 5, failureThreshold: 2 },
          livenessProbe: {
            ...probe,
            initialDelaySeconds: 10,
            periodSeconds: 10,
            failureThreshold: 3,
          },
          volumeMounts: [
            { name: 'squid-config', mountPath: SQUID_CONF_DIR, readOnly: true },
            ...(auth === undefined ? [] : [auth.mount]),
            ...SCRATCH_VOLUMES.map((v) => ({ name: v.name, mountPath: v.mountPath })),
          ],
        },
      ],
      volumes: [
        {
          name: 'squid-config',
          downwardAPI: {
            defaultMode: 0o444,
            items: [
              {
                path: 'squid.conf',
                fieldRef: { fieldPath: `metadata.annotations['${SQUID_CONF_ANNOTATION}']` },
              },
            ],
          },
        },
        ...(auth === undefined ? [] : [auth.volume]),
        ...SCRATCH_VOLUMES.map((v) => ({
          name: v.name,
          emptyDir: { medium: 'Memory', sizeLimit: '16Mi' },
        })),
      ],
    },
  };
}
