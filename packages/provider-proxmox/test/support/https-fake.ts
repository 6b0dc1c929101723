// The HTTPS fake of the Proxmox VE API: a node:https server on 127.0.0.1
// with a CA and server certificate made by the openssl CLI at test time,
// answering from the in-memory PVE model with the shapes, statuses, reason
// phrases and bodies pveproxy gives.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type MalformedKind, PveError, type PveModel } from './pve-model.js';

export interface Pki {
  readonly dir: string;
  readonly caFile: string;
  /** A second CA that did not sign the server certificate. */
  readonly otherCaFile: string;
  readonly key: string;
  readonly cert: string;
}

let cached: Pki | undefined;

/** Makes (once per process) a CA and a server certificate for 127.0.0.1 and localhost. */
export function makePki(): Pki {
  if (cached !== undefined) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'pve-fake-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const name of ['ca', 'other-ca']) {
    ssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${name} fake PVE`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
  }
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=pv1-1');
  writeFileSync(
    join(dir, 'ext.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  cached = {
    dir,
    caFile: join(dir, 'ca.pem'),
    otherCaFile: join(dir, 'other-ca.pem'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
  };
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return cached;
}

export interface HttpsFake {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly pki: Pki;
  readonly model: PveModel;
  /** Requests received, as `METHOD path`. */
  readonly requests: string[];
  /** HTTP versions the requests came with. */
  readonly httpVersions: Set<string>;
  /** TLS connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

type Route = {
  method: string;
  re: RegExp;
  call: string;
  run: (m: RegExpExecArray, body: Body, url: URL) => unknown;
};

interface Body {
  form: Record<string, string>;
  file?: { name: string; data: Uint8Array };
}

function routes(model: PveModel): Route[] {
  const n = (m: RegExpExecArray, i: number) => decodeURIComponent(m[i] as string);
  const vm = '/nodes/([^/]+)/qemu/(\\d+)';
  const r = (method: string, path: string, call: string, run: Route['run']): Route => ({
    method,
    re: new RegExp(`^/api2/json${path}$`),
    call,
    run,
  });
  return [
    r('GET', '/version', 'version', () => model.version()),
    r('GET', '/nodes/([^/]+)/status', 'nodeStatus', (m) => model.nodeStatus(n(m, 1))),
    r('GET', '/nodes/([^/]+)/storage/([^/]+)/status', 'storageStatus', (m) =>
      model.storageStatus(n(m, 1), n(m, 2)),
    ),
    r('GET', '/cluster/resources', 'clusterResources', () => model.clusterResources()),
    r('GET', `${vm}/config`, 'vmConfig', (m) => model.vmConfig(n(m, 1), Number(m[2]))),
    r('PUT', `${vm}/config`, 'setVmConfig', (m, b) =>
      model.setVmConfig(n(m, 1), Number(m[2]), b.form),
    ),
    r('POST', `${vm}/clone`, 'clone', (m, b) => model.clone(n(m, 1), Number(m[2]), b.form)),
    r('PUT', `${vm}/resize`, 'resize', (m, b) =>
      model.resize(n(m, 1), Number(m[2]), b.form.disk ?? '', b.form.size ?? ''),
    ),
    r('POST', `${vm}/status/start`, 'start', (m) => model.start(n(m, 1), Number(m[2]))),
    r('POST', `${vm}/status/stop`, 'stop', (m) => model.stop(n(m, 1), Number(m[2]))),
    r('GET', `${vm}/status/current`, 'vmStatus', (m) => model.vmStatus(n(m, 1), Number(m[2]))),
    r('DELETE', vm, 'destroy', (m, _b, url) =>
      model.destroy(n(m, 1), Number(m[2]), {
        unreferencedDisks: url.searchParams.get('destroy-unreferenced-disks') === '1',
      }),
    ),
    r('GET', '/nodes/([^/]+)/tasks/([^/]+)/status', 'taskStatus', (m) =>
      model.taskStatus(n(m, 1), n(m, 2)),
    ),
    r('GET', `${vm}/agent/network-get-interfaces`, 'agentNetworkInterfaces', (m) =>
      model.agentNetworkInterfaces(n(m, 1), Number(m[2])),
    ),
    r('POST', '/nodes/([^/]+)/storage/([^/]+)/upload', 'uploadIso', (m, b) => {
      if (b.file === undefined) {
        throw new PveError(400, 'Parameter verification failed.', {
          filename: 'property is missing and it is not optional',
        });
      }
      return model.uploadIso(n(m, 1), n(m, 2), b.form.content ?? '', b.file.name, b.file.data);
    }),
    r('DELETE', '/nodes/([^/]+)/storage/([^/]+)/content/([^/]+)', 'deleteVolume', (m) =>
      model.deleteVolume(n(m, 1), n(m, 2), n(m, 3)),
    ),
  ];
}

async function readBody(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const buf = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('application/x-www-form-urlencoded')) {
    return { form: Object.fromEntries(new URLSearchParams(buf.toString('utf8'))) };
  }
  if (type.startsWith('multipart/form-data')) {
    const fd = await new Response(buf, { headers: { 'content-type': type } }).formData();
    const form: Record<string, string> = {};
    let file: Body['file'];
    for (const [k, v] of fd.entries()) {
      if (typeof v === 'string') form[k] = v;
      else if (k === 'filename')
        file = { name: v.name, data: new Uint8Array(await v.arrayBuffer()) };
    }
    return file === undefined ? { form } : { form, file };
  }
  return { form: {} };
}

function send(res: ServerResponse, status: number, reason: string, body: string | undefined): void {
  if (res.destroyed || res.writableEnded) return;
  res.statusCode = status;
  res.statusMessage = reason.replace(/[^\x20-\x7e]/g, ' ');
  if (body === undefined) {
    res.setHeader('content-length', '0');
    res.end();
    return;
  }
  res.setHeader('content-type', 'application/json;charset=UTF-8');
  res.end(body);
}

/**
 * A 200 whose body cannot be read as the answer: `{"data":null}`, the wrong
 * container, an HTML page, or a body without `data`. Where `null` is the
 * normal answer (a config write), an HTML page.
 */
function sendMalformed(res: ServerResponse, kind: MalformedKind, data: unknown): void {
  if (kind === 'not-json' || data === null) {
    if (res.destroyed || res.writableEnded) return;
    res.statusCode = 200;
    res.setHeader('content-type', 'text/html');
    res.end('<html><body><h1>Bad Gateway</h1></body></html>\n');
    return;
  }
  const body =
    kind === 'null-data'
      ? { data: null }
      : kind === 'no-data'
        ? {}
        : { data: Array.isArray(data) ? {} : typeof data === 'object' ? [] : {} };
  send(res, 200, 'OK', JSON.stringify(body));
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startHttpsFake(model: PveModel): Promise<HttpsFake> {
  const pki = makePki();
  const table = routes(model);
  const requests: string[] = [];
  const httpVersions = new Set<string>();
  let connections = 0;
  const server: Server = createServer({ key: pki.key, cert: pki.cert }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'https://127.0.0.1');
      requests.push(`${req.method} ${url.pathname}`);
      httpVersions.add(req.httpVersion);
      const route = table.find((r) => r.method === req.method && r.re.test(url.pathname));
      let body: Body;
      try {
        body = await readBody(req);
      } catch {
        return; // the client went away before its request was whole: it never arrived
      }
      if (route === undefined) {
        send(
          res,
          501,
          `Method '${req.method} ${url.pathname}' not implemented`,
          JSON.stringify({ data: null }),
        );
        return;
      }
      const m = route.re.exec(url.pathname) as RegExpExecArray;
      // The request has reached the server: it is carried out even when its
      // client gives up while it is held (send writes nothing then).
      const ticket = await model.enter(route.call);
      const node = /\/nodes\/([^/]+)\//.exec(url.pathname)?.[1];
      const ms = node === undefined ? 0 : (model.nodeDelay.get(node) ?? 0);
      if (ms > 0) await delay(ms);
      try {
        const auth = req.headers.authorization;
        model.authenticate(
          auth?.startsWith('PVEAPIToken=') ? auth.slice('PVEAPIToken='.length) : undefined,
        );
        const data: unknown = route.run(m, body, url) ?? null;
        if (ticket.malformed === undefined) send(res, 200, 'OK', JSON.stringify({ data }));
        else sendMalformed(res, ticket.malformed, data);
      } catch (err) {
        if (err instanceof PveError) {
          if (err.status === 401 && !err.noBody) {
            // A careless proxy in front of pveproxy echoing the credential in its body.
            send(
              res,
              401,
              'authentication failure',
              JSON.stringify({ data: null, message: `${err.message}\n` }),
            );
          } else if (err.noBody) send(res, err.status, err.message, undefined);
          else
            send(
              res,
              err.status,
              err.message,
              JSON.stringify({
                data: null,
                message: `${err.message}\n`,
                ...(err.errors === undefined ? {} : { errors: err.errors }),
              }),
            );
          return;
        }
        send(
          res,
          500,
          'internal error',
          JSON.stringify({ data: null, message: 'internal error\n' }),
        );
      }
    })();
  });
  server.on('secureConnection', () => {
    connections++;
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    pki,
    model,
    requests,
    httpVersions,
    connections: () => connections,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
