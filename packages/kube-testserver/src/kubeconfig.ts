/**
 * The kubeconfig written for the server: one cluster, user and context,
 * selected as current.
 *
 * @module
 */
import { stringify } from 'yaml';

/** What a kubeconfig written for the server says. */
export interface KubeconfigOptions {
  /** The bearer token (default: the admin token). */
  readonly token?: string;
  /** The context's default namespace (default `default`). */
  readonly namespace?: string;
  /** The name of the cluster, user and context (default `kube-testserver`). */
  readonly name?: string;
}

/** A kubeconfig (YAML) with one cluster, user and context, selected as current. */
export function kubeconfigYaml(
  server: string,
  ca: string,
  token: string,
  opts: KubeconfigOptions = {},
): string {
  const name = opts.name ?? 'kube-testserver';
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server,
          'certificate-authority-data': Buffer.from(ca, 'utf8').toString('base64'),
        },
      },
    ],
    users: [{ name, user: { token } }],
    contexts: [
      { name, context: { cluster: name, user: name, namespace: opts.namespace ?? 'default' } },
    ],
    'current-context': name,
    preferences: {},
  });
}
