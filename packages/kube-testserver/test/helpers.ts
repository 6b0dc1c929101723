import { request as httpsRequest } from 'node:https';
import type { KubeTestServer, Reply, RequestOptions } from '../src/index.js';

export type { Reply } from '../src/index.js';

/** Sends one request to the server over HTTPS, trusting its CA. */
export function call(
  server: KubeTestServer,
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<Reply> {
  return server.request(method, path, opts);
}

/** Opens a watch and collects its event lines until `stop()`. */
export function openWatch(server: KubeTestServer, path: string, token?: string) {
  const url = new URL(path, server.url);
  // biome-ignore lint/suspicious/noExplicitAny: watch events are read as plain JSON
  const events: any[] = [];
  let ended = false;
  let status = 0;
  let resolveEnd: () => void = () => {};
  const endedPromise = new Promise<void>((r) => {
    resolveEnd = r;
  });
  const waiters: { n: number; resolve: () => void }[] = [];
  const req = httpsRequest(
    url,
    { ca: server.caCert, headers: { Authorization: `Bearer ${token ?? server.adminToken}` } },
    (res) => {
      status = res.statusCode ?? 0;
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        let i = buf.indexOf('\n');
        while (i >= 0) {
          events.push(JSON.parse(buf.slice(0, i)));
          buf = buf.slice(i + 1);
          i = buf.indexOf('\n');
        }
        for (const w of waiters.splice(0)) {
          if (events.length >= w.n) w.resolve();
          else waiters.push(w);
        }
      });
      res.on('end', () => {
        ended = true;
        resolveEnd();
      });
      res.on('error', () => {
        ended = true;
        resolveEnd();
      });
    },
  );
  req.on('error', () => {
    ended = true;
    resolveEnd();
  });
  req.end();
  return {
    events,
    get status() {
      return status;
    },
    get ended() {
      return ended;
    },
    ended$: endedPromise,
    /** Resolves once `n` events arrived. */
    waitFor(n: number): Promise<void> {
      if (events.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    stop() {
      req.destroy();
    },
  };
}

/** Polls until `check` returns true or `timeoutMs` passes. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Creates a CustomResourceDefinition from its manifest; throws unless the answer is 201. */
export async function createCrd(server: KubeTestServer, manifest: unknown): Promise<void> {
  const r = await call(server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    body: manifest,
  });
  if (r.status !== 201) throw new Error(`creating the CRD answered ${r.status}: ${r.text}`);
}
