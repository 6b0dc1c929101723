/**
 * A Proxy's credential as the CLI reads it (`proxy-op url`, `proxy-op
 * probe`): from its file in standalone mode, or from the Secret its status
 * names on Kubernetes (the generated one, or its `secretRef`).
 *
 * @module
 */

import type { KubeClient } from '../kube/client.js';
import { readCredentialFile } from '../standalone/credentials.js';

/** A credential and, where kept, the client URL with it. */
export interface CliCredential {
  readonly username: string;
  readonly password: string;
  readonly url?: string | undefined;
}

/** The credential in a standalone credential file; undefined when there is none. */
export async function fileCredential(path: string): Promise<CliCredential | undefined> {
  const kept = await readCredentialFile(path);
  const c = kept?.record.current;
  return c === undefined
    ? undefined
    : { username: c.username, password: c.password, url: kept?.url };
}

/** The credential in the Secret `name` of `namespace`; undefined when it has none. */
export async function secretCredential(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<CliCredential | undefined> {
  const s = await client.request<{ data?: Record<string, string> }>({
    operation: `reading Secret ${namespace}/${name}`,
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/secrets/${name}`,
  });
  const text = (k: string) => {
    const v = s.data?.[k];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  };
  const username = text('username');
  const password = text('password');
  if (username === undefined || password === undefined) return undefined;
  return { username, password, url: text('url') };
}
