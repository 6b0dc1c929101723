// The HTTPS fake of the Proxmox VE API: a node:https server on 127.0.0.1
// with a CA and server certificate made by the openssl CLI at test time. It
// behaves as pveproxy does (pve-http-server's AnyEvent.pm): the headers it
// sends, keep-alive for up to 100 requests and 5 s idle, the connection
// closed after any answer of 400 or above, a 401 held for 3 s, chunked
// bodies refused (501), uploads taken only as multipart with a
// Content-Length, parsed field by field as pveproxy does, other bodies
// refused past 512 KiB or of another type, answers gzipped past 1 KiB. It
// answers from the in-memory model through pve-api.ts; failures with a kept
// answer (test/fixtures/pve) are sent as kept. No input crashes it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { captured } from './answers.js';
import { callOf, errorAnswer, route, serve } from './pve-api.js';
import { type HostileKind, type MalformedKind, PveError, type PveModel } from './pve-model.js';

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

/** Options of {@link startHttpsFake}. */
export interface HttpsFakeOptions {
  /** pveproxy's idle time before it closes a keep-alive connection, in ms (5 s). */
  readonly idleTimeoutMs?: number;
  /** Requests on one connection before pveproxy closes it (100). */
  readonly requestsPerConnection?: number;
  /**
   * Called once a request has arrived whole and been counted, before it is
   * carried out (the crash test kills the client here). The request is
   * carried out whatever happens to its client.
   */
  readonly onRequest?: ((call: string, index: number) => void) | undefined;
}

export interface HttpsFake {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly pki: Pki;
  readonly model: PveModel;
  /** Requests received, as `METHOD path?query`. */
  readonly requests: string[];
  /** HTTP versions the requests came with. */
  readonly httpVersions: Set<string>;
  /** TLS connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

/** The most a non-upload body may hold (pveproxy's limit_max_post). */
const MAX_POST = 512 * 1024;
const KNOWN_METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE']);

interface Body {
  params: Record<string, string | string[]>;
  file?: { name: string; data: Uint8Array };
}

/** A reason to answer other than from the API: status, reason phrase, text body (none: closed without an answer). */
class Refusal extends Error {
  constructor(
    readonly status: number | undefined,
    reason: string,
    readonly text?: string,
  ) {
    super(reason);
  }
}

/** pveproxy's decode_urlencoded: `&` or `;` between pairs, `+` for space, a repeated key an array. */
function decodeUrlencoded(data: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const kv of data.split(/[&;]/)) {
    if (kv === '') continue;
    const [rawK, rawV] = kv.split('=');
    const dec = (s: string) =>
      Buffer.from(
        s
          .replace(/\+/g, ' ')
          .replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) =>
            String.fromCharCode(Number.parseInt(h, 16)),
          ),
        'latin1',
      ).toString('utf8');
    const k = dec(rawK ?? '');
    if (rawV === undefined) continue;
    const v = dec(rawV);
    const old = out[k];
    out[k] = old === undefined ? v : Array.isArray(old) ? [...old, v] : [old, v];
  }
  return out;
}

/** Parameters as strings or lists of strings; an object is refused as pvedaemon would (a list, by the schema). */
function flatten(p: Record<string, unknown>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const errors: Record<string, string> = {};
  for (const [k, v] of Object.entries(p)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number') out[k] = String(v);
    else if (typeof v === 'boolean') out[k] = v ? '1' : '0';
    else if (Array.isArray(v)) out[k] = v.map(String);
    else if (v !== null) errors[k] = "type check ('string') failed - got HASH";
  }
  if (Object.keys(errors).length > 0) {
    throw new PveError(400, 'Parameter verification failed.', errors);
  }
  return out;
}

/**
 * pveproxy's multipart reader: the `content` (and checksum) fields first,
 * then the file under the field name `filename`, whose data runs to the
 * closing boundary. Anything else fails the upload with a 500 text answer.
 */
function parseUpload(
  buf: Buffer,
  boundary: string,
  query: Record<string, string | string[]>,
): Body {
  const perl = (msg: string, line: number) =>
    `${msg} at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line ${line}.\n`;
  let s = buf.toString('latin1');
  const esc = boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const delim = `--${esc}\\r?\\n`;
  const params: Record<string, string | string[]> = { ...query };
  const first = new RegExp(`^[\\s\\S]*?(${delim})`).exec(s);
  if (first === null)
    throw new Refusal(500, perl('upload failed', 1370).trimEnd(), perl('upload failed', 1370));
  s = s.slice(first.index + (first[0].length - (first[1] as string).length));
  const disposition = (v: string) => {
    if (v !== 'form-data') {
      const msg = `wrong Content-Disposition '${v}' in multipart, expected 'form-data'`;
      throw new Refusal(500, msg, `${msg}\n`);
    }
  };
  for (const name of ['content', 'checksum-algorithm', 'checksum']) {
    const m = new RegExp(
      `^${delim}[\\s\\S]*?Content-Disposition: ([\\s\\S]*?); name="${name}"([\\s\\S]*?${delim})`,
    ).exec(s);
    if (m === null) continue;
    disposition(m[1] as string);
    s = (m[2] as string) + s.slice(m[0].length);
    s = s.replace(/^[\s\S]*?(\r?\n){2}/, '');
    const v = new RegExp(`^([\\s\\S]*?)(${delim})`).exec(s);
    if (v !== null) {
      params[name] = Buffer.from(v[1] as string, 'latin1')
        .toString('utf8')
        .trim();
      s = s.slice((v[1] as string).length);
    }
  }
  const filePart = new RegExp(
    `^${delim}Content-Disposition: ([\\s\\S]*?); name="([\\s\\S]*?)"; filename="([^"]+)"`,
  ).exec(s);
  if (filePart === null)
    throw new Refusal(500, perl('upload failed', 1370).trimEnd(), perl('upload failed', 1370));
  disposition(filePart[1] as string);
  if (filePart[2] !== 'filename') {
    const msg = perl(
      `wrong field name '${filePart[2]}' for file upload, expected 'filename'`,
      1325,
    );
    throw new Refusal(500, msg.trimEnd(), msg);
  }
  params.filename = (filePart[3] as string).trim();
  s = s.slice(filePart[0].length).replace(/^[\s\S]*?(\r?\n){2}/, '');
  const end = new RegExp(`^([\\s\\S]*?)(\\r?\\n)?--${esc}--`).exec(s);
  if (end === null)
    throw new Refusal(500, perl('upload failed', 1370).trimEnd(), perl('upload failed', 1370));
  return {
    params,
    file: { name: params.filename, data: new Uint8Array(Buffer.from(end[1] as string, 'latin1')) },
  };
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startHttpsFake(
  model: PveModel,
  opts: HttpsFakeOptions = {},
): Promise<HttpsFake> {
  const pki = makePki();
  const requests: string[] = [];
  const httpVersions = new Set<string>();
  const perConnection = opts.requestsPerConnection ?? 100;
  const served = new WeakMap<Socket, number>();
  let connections = 0;
  let index = 0;

  /** Writes an answer the way pveproxy's response() does. */
  const respond = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    reason: string,
    body: string,
    contentType: string | undefined,
    extra: Record<string, string> = {},
  ): void => {
    if (res.destroyed || res.writableEnded || res.headersSent) return;
    const socket = req.socket;
    const count = (served.get(socket) ?? 0) + 1;
    served.set(socket, count);
    const keepAlive =
      status < 400 && count < perConnection && !/close/i.test(req.headers.connection ?? '');
    const date = new Date().toUTCString();
    res.statusCode = status;
    res.statusMessage = /[\r\n]/.test(reason)
      ? 'Bad Request'
      : reason.replace(/[^\x20-\x7e]/g, '?');
    res.setHeader('Cache-Control', 'max-age=0');
    res.setHeader('Date', date);
    res.setHeader('Expires', date);
    res.setHeader('Pragma', 'no-cache');
    res.setHeader('Server', 'pve-api-daemon/3.0');
    if (contentType !== undefined) res.setHeader('Content-Type', contentType);
    for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
    res.setHeader('Connection', keepAlive ? 'Keep-Alive' : 'close');
    let out = Buffer.from(body, 'utf8');
    if (out.length > 1024 && /gzip/.test(String(req.headers['accept-encoding'] ?? ''))) {
      out = gzipSync(out);
      res.setHeader('Content-Encoding', 'gzip');
    }
    if (out.length > 0) res.setHeader('Content-Length', String(out.length));
    // No body: no length either, the connection's end closes it (pveproxy's way).
    else res.useChunkedEncodingByDefault = false;
    res.shouldKeepAlive = keepAlive;
    res.end(out);
  };

  /** A failure as pveproxy formats it (a kept answer as kept). */
  const respondError = (req: IncomingMessage, res: ServerResponse, err: PveError): void => {
    const a = errorAnswer(err);
    respond(req, res, a.status, a.reason, a.body, a.contentType);
  };

  const sendMalformed = (
    req: IncomingMessage,
    res: ServerResponse,
    kind: MalformedKind,
    data: unknown,
  ): void => {
    if (kind === 'not-json' || data === null) {
      respond(req, res, 200, 'OK', '<html><body><h1>Bad Gateway</h1></body></html>\n', 'text/html');
      return;
    }
    const body =
      kind === 'null-data'
        ? { data: null }
        : kind === 'no-data'
          ? {}
          : { data: Array.isArray(data) ? {} : typeof data === 'object' ? [] : {} };
    respond(req, res, 200, 'OK', JSON.stringify(body), 'application/json;charset=UTF-8');
  };

  const sendHostile = (res: ServerResponse, kind: HostileKind, body: string): void => {
    if (kind === 'html-502') {
      const a = captured('error-502-html-proxy');
      res.statusCode = a.status;
      res.statusMessage = a.reason;
      for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
      res.setHeader('Content-Length', String(Buffer.byteLength(a.body)));
      res.end(a.body);
      return;
    }
    const bytes = Buffer.from(body, 'utf8');
    res.statusCode = 200;
    res.statusMessage = 'OK';
    res.setHeader('Content-Type', 'application/json;charset=UTF-8');
    res.setHeader('Server', 'pve-api-daemon/3.0');
    res.setHeader('Content-Length', String(bytes.length));
    if (kind === 'truncated') {
      // Half the body, then the connection drops.
      res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.destroy());
      return;
    }
    // slow-loris: one byte a second, never the whole body before the client gives up.
    res.flushHeaders();
    let i = 0;
    const drip = setInterval(() => {
      if (res.destroyed || i >= bytes.length) {
        clearInterval(drip);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(bytes.subarray(i, i + 1));
      i++;
    }, 1_000);
    res.on('close', () => clearInterval(drip));
  };

  /** Reads the body the way pveproxy does; throws a Refusal for what it refuses. */
  const readBody = async (
    req: IncomingMessage,
    url: URL,
    relPath: string,
    token: string | undefined,
  ): Promise<Body> => {
    const query = flatten(decodeUrlencoded(url.search.slice(1)));
    const method = req.method ?? 'GET';
    const len = Number(req.headers['content-length'] ?? '0');
    const te = req.headers['transfer-encoding'];
    if (te !== undefined) {
      throw te.toLowerCase() === 'chunked'
        ? new Refusal(
            501,
            'chunked transfer encoding not supported',
            'chunked transfer encoding not supported',
          )
        : new Refusal(
            501,
            `Unknown transfer encoding '${te}'`,
            `Unknown transfer encoding '${te}'`,
          );
    }
    if (!(len > 0)) return { params: query };
    if (method !== 'PUT' && method !== 'POST') {
      throw new Refusal(
        501,
        `Unexpected content for method '${method}'`,
        `Unexpected content for method '${method}'`,
      );
    }
    const ctype = req.headers['content-type'];
    const [ct, ...ps] = (ctype ?? '').split(/\s*[;,]\s*/);
    const boundary = ps
      .map((p) => /^\s*boundary\s*=\s*(\S+?)\s*$/.exec(p)?.[1])
      .find((b) => b !== undefined);
    const isUpload =
      method === 'POST' &&
      /^\/nodes\/[^/]+\/storage\/[^/]+\/upload$/.test(relPath) &&
      token !== undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      // Past the limit the rest is read and dropped.
      if (isUpload || size <= MAX_POST) chunks.push(c as Buffer);
    }
    if (!isUpload && len > MAX_POST)
      throw new Refusal(501, 'for data too large', 'for data too large');
    const buf = Buffer.concat(chunks);
    if (isUpload) {
      // pveproxy dies on these without answering; the connection is dropped.
      if (boundary === undefined || ct !== 'multipart/form-data')
        throw new Refusal(undefined, 'upload without multipart');
      return parseUpload(buf, boundary, query);
    }
    if (ct === '' || ct === undefined || ct === 'application/x-www-form-urlencoded') {
      return { params: { ...flatten(decodeUrlencoded(buf.toString('latin1'))), ...query } };
    }
    if (ct === 'application/json') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(buf.toString('utf8'));
      } catch {
        const msg = `malformed JSON string, neither tag, array, object, number, string or atom, at character offset 0 (before "${buf.toString('utf8').slice(0, 20)}...") at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 934.`;
        throw new Refusal(500, msg, `${msg}\n`);
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        const msg = 'Not a HASH reference at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 940.';
        throw new Refusal(500, msg, `${msg}\n`);
      }
      return { params: { ...flatten(parsed as Record<string, unknown>), ...query } };
    }
    throw new Refusal(
      506,
      `upload 'Content-Type '${ctype}' not implemented`,
      `upload 'Content-Type '${ctype}' not implemented`,
    );
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const start = Date.now();
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    httpVersions.add(req.httpVersion);
    const line = `${method} ${url.pathname}${url.search}`;
    requests.push(line);
    if (!KNOWN_METHODS.has(method)) {
      respond(req, res, 501, `method '${method}' not available`, '', undefined);
      return;
    }
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      path = url.pathname;
    }
    if (!path.startsWith('/api2/json/') && path !== '/api2/json') {
      respond(req, res, 501, 'no such uri', 'no such uri', undefined);
      return;
    }
    const relPath = path.slice('/api2/json'.length);
    const auth = req.headers.authorization;
    const token = /(?:^|\s)PVEAPIToken[=\s]\s*(\S+)/.exec(auth ?? '')?.[1];
    let body: Body;
    try {
      body = await readBody(req, url, relPath, token);
    } catch (err) {
      if (err instanceof Refusal) {
        // What is left of the body is read and dropped, so the client can finish sending it.
        req.resume();
        if (err.status === undefined) setTimeout(() => req.socket.destroy(), 100);
        else respond(req, res, err.status, err.message, err.text ?? '', undefined);
        return;
      }
      if (err instanceof PveError) {
        respondError(req, res, err);
        return;
      }
      return; // the client went away before its request was whole: it never arrived
    }
    const call = callOf(method, relPath);
    const i = index++;
    // The request has reached the server whole: it is carried out even when
    // its client gives up (nothing is written to a closed connection).
    const ticket = await model.enter(call, line);
    opts.onRequest?.(call, i);
    const node = route(method, relPath)?.pathParams.node;
    const ms = node === undefined ? 0 : (model.nodeDelay.get(node) ?? 0);
    if (ms > 0) await delay(ms);
    let data: unknown;
    try {
      data =
        (await serve(model, { method, relPath, params: body.params, file: body.file, token })) ??
        null;
    } catch (err) {
      if (err instanceof PveError) {
        if (err.status === 401 || (err.status === 403 && call === 'uploadIso')) {
          // pveproxy holds every failed authentication (an upload's privilege is checked there too).
          const wait = model.timing.authFailureDelayMs - (Date.now() - start);
          if (wait > 0) await delay(wait);
          if (err.status === 403) {
            respond(req, res, 403, err.message, '', undefined);
            return;
          }
        }
        respondError(req, res, err);
        return;
      }
      respond(
        req,
        res,
        500,
        'internal error',
        JSON.stringify({ data: null, message: 'internal error\n' }),
        'application/json;charset=UTF-8',
      );
      return;
    }
    const text = JSON.stringify({ data });
    if (ticket.hostile !== undefined) sendHostile(res, ticket.hostile, text);
    else if (ticket.malformed !== undefined) sendMalformed(req, res, ticket.malformed, data);
    else respond(req, res, 200, 'OK', text, 'application/json;charset=UTF-8');
  };

  const server: Server = createServer(
    { key: pki.key, cert: pki.cert, ALPNProtocols: ['http/1.1'] },
    (req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) res.destroy();
      });
    },
  );
  server.on('secureConnection', () => {
    connections++;
  });
  // A request pveproxy cannot read: 400, and the connection closed.
  server.on('clientError', (_err, socket) => {
    if (socket.writable) {
      socket.end(
        'HTTP/1.1 400 bad request\r\nServer: pve-api-daemon/3.0\r\nConnection: close\r\nContent-Length: 11\r\n\r\nbad request',
      );
    } else socket.destroy();
  });
  server.keepAliveTimeout = opts.idleTimeoutMs ?? 5_000;
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
