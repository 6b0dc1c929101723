/**
 * The installation a command looks at, the same for every command: a
 * standalone operator's manifests folder and state file (`--standalone DIR`,
 * `--state FILE`), or a cluster (`--kubeconfig FILE`, `--context NAME`),
 * with `-n NAMESPACE` for the object named.
 *
 * @module
 */
import type { KubeClient } from '../kube/client.js';
import { defaultStateFile } from '../standalone/state-file.js';

/** The `parseArgs` options of the lookup. */
export const TARGET_OPTIONS = {
  namespace: { type: 'string', short: 'n', default: 'default' },
  standalone: { type: 'string' },
  state: { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const;

/** The lookup's flags as `parseArgs` reads them. */
export interface TargetFlags {
  readonly namespace: string;
  readonly standalone?: string | undefined;
  readonly state?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
}

/** Where a command looks. */
export type Target =
  | { readonly kind: 'standalone'; readonly namespace: string; readonly stateFile: string }
  | {
      readonly kind: 'kubernetes';
      readonly namespace: string;
      readonly kubeconfig?: string | undefined;
      readonly context?: string | undefined;
    };

/** The installation the flags name: standalone when `--standalone` is given, else the cluster. */
export function targetOf(v: TargetFlags): Target {
  if (v.standalone !== undefined) {
    return {
      kind: 'standalone',
      namespace: v.namespace,
      stateFile: v.state ?? defaultStateFile(v.standalone),
    };
  }
  return {
    kind: 'kubernetes',
    namespace: v.namespace,
    kubeconfig: v.kubeconfig,
    context: v.context,
  };
}

/**
 * Runs `fn` with a client of the cluster `t` names, closed after it. The
 * Kubernetes client is loaded only here: a standalone command never loads it.
 */
export async function withCluster<T>(
  t: Extract<Target, { kind: 'kubernetes' }>,
  fn: (client: KubeClient) => Promise<T>,
): Promise<T> {
  const { KubeClient } = await import('../kube/client.js');
  const client = await KubeClient.load({ kubeconfig: t.kubeconfig, context: t.context });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}
