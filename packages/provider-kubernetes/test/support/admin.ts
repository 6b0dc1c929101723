/**
 * Requests to the test server as its admin, behind the provider's back
 * (the harness's kubelet, scheduler and cluster admin).
 *
 * @module
 */
import type { KubeTestServer } from '@proxy-op/kube-testserver';

/** One answer of the test server. */
export interface Reply {
  readonly status: number;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON in tests
  readonly body: any;
}

/** Sends one request to the test server with the admin token (or `token`). */
export async function admin(
  server: KubeTestServer,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; token?: string } = {},
): Promise<Reply> {
  const r = await server.request(method, path, {
    ...opts,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  return { status: r.status, text: r.text, body: r.body };
}

/** Like {@link admin}, but fails on a status outside 2xx. */
export async function adminOk(
  server: KubeTestServer,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; token?: string } = {},
): Promise<Reply> {
  const r = await admin(server, method, path, opts);
  if (r.status < 200 || r.status > 299) {
    throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  }
  return r;
}

/** The path of a Pod. */
export function podPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${namespace}/pods/${name}`;
}
