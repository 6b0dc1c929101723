/**
 * The proxy Pod, built as a pure function of what Create resolved: one
 * object per proxy, carrying its own Squid configuration (an annotation
 * projected into a file by a downward API volume), its ownership mark in
 * labels, and a hardened container.
 *
 * @module
 */
import type { V1Pod } from '@kubernetes/client-node';
import { renderSquidConfig } from '@proxy-op/squid-config';
import type { ImageEntry, MachineTypeEntry } from './config.js';
import { APP_LABELS, markLabels } from './labels.js';

/** The annotation that holds the Pod's Squid configuration. */
export const SQUID_CONF_ANNOTATION = 'proxy-op.io/squid.conf';
/** Where the configuration file appears in the container. */
export const SQUID_CONF_DIR = '/etc/squid-proxy-op';
/** The node label a zone is matched against. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** The Squid container's name. */
export const CONTAINER_NAME = 'squid';
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
}

/** The proxy Pod for a plan. The same plan always gives the same object. */
export function buildPod(plan: PodPlan): V1Pod {
  const squidConf = renderSquidConfig({
    port: plan.port,
    allowedSources: plan.allowedSources,
    connectPorts: plan.connectPorts,
  });
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
        ...SCRATCH_VOLUMES.map((v) => ({
          name: v.name,
          emptyDir: { medium: 'Memory', sizeLimit: '16Mi' },
        })),
      ],
    },
  };
}
