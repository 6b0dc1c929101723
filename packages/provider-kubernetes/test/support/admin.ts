/**
 * Requests to the test server as its admin, behind the provider's back
 * (the harness's kubelet, scheduler and cluster admin).
 *
 * @module
 */
import { request as httpsRequest } from 'node:https';
import type { KubeTestServer } from '@proxy-op/kube-testserver';

/** One answer of the test server. */
export interface Reply {
  readonly status: number;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON in tests
  readonly body: any;
}

/** Sends one request to the test server with the admin token (or `token`). */
export function admin(
  server: KubeTestServer,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; token?: string } = {},
): Promise<Reply> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(new URL(path, server.url), {
      method,
      ca: server.caCert,
      headers: {
        Authorization: `Bearer ${opts.token ?? server.adminToken}`,
        ...(payload === undefined
          ? {}
          : {
              'Content-Type': opts.contentType ?? 'application/json',
              'Content-Length': String(Buffer.byteLength(payload)),
            }),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, body });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
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
