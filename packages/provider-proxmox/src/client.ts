/**
 * The production adapter of the seam: the Proxmox VE REST API over undici.
 *
 * @module
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { Agent, type Dispatcher, FormData, fetch } from 'undici';
import {
  type AgentInterface,
  ApiError,
  CaFileError,
  type CloneParams,
  type ProxmoxApi,
  type ResourceEntry,
  type StorageStatus,
  type TaskStatus,
  TokenFileError,
  type VmConfig,
  type VmRef,
  type VmStatus,
} from './api.js';

const TOKEN_RE = /^([^\s@!=]+@[^\s@!=]+![^\s=]+)=(\S+)$/;
const INSTRUMENTATION = '@proxy-op/provider-proxmox';

/** Connect and TLS handshake budget, in ms. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Keep-alive connections per host. */
export const CONNECTIONS_PER_HOST = 4;

/** A token read from its file: the id (safe to show) and the whole line (secret). */
export interface Token {
  /** `user@realm!tokenid`, the part before `=`. Safe to log. */
  readonly id: string;
  /** The whole line, for the Authorization header. Never logged. */
  readonly line: string;
}

/**
 * Reads and checks the token file: one line `user@realm!tokenid=secret`.
 * A missing file is `PROXMOX_TOKEN_MISSING`, any other content
 * `PROXMOX_TOKEN_MALFORMED`; neither message quotes the content.
 */
export async function readToken(path: string): Promise<Token> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new TokenFileError(
      'PROXMOX_TOKEN_MISSING',
      `token file ${path} cannot be read (${typeof code === 'string' ? code : 'error'})`,
    );
  }
  const line = text.trim();
  const m = TOKEN_RE.exec(line);
  if (m === null || line.includes('\n')) {
    throw new TokenFileError(
      'PROXMOX_TOKEN_MALFORMED',
      `token file ${path} does not hold one line user@realm!tokenid=secret`,
    );
  }
  return { id: m[1] as string, line };
}

/** Options of {@link HttpProxmoxApi}. */
export interface HttpApiOptions {
  /** `https://host:8006`, without `/api2/json`. */
  readonly url: string;
  readonly tokenFile: string;
  readonly caFile?: string | undefined;
  readonly insecureSkipTLSVerify?: boolean | undefined;
  /** One request's budget in ms, response included; 0 for none. */
  readonly requestTimeoutMs: number;
  /** Makes the `HTTP <METHOD>` spans; the global tracer when unset. */
  readonly tracer?: Tracer | undefined;
}

type Query = Record<string, string>;

/**
 * The seam over HTTPS. One undici `Agent` (HTTP/1.1 only, 4 keep-alive
 * connections per host, 10 s to connect and finish the TLS handshake),
 * created on the first request once the CA file is loaded; the CA is then
 * cached for the life of the object. The token file is read on every
 * request, so a rotated token is used at once. Each request is one
 * `HTTP <METHOD>` CLIENT span under the caller's span, and none without
 * one; the span records the method, host, port and path, never a header.
 */
export class HttpProxmoxApi implements ProxmoxApi {
  readonly #opts: HttpApiOptions;
  readonly #base: URL;
  readonly #tracer: Tracer;
  #agent: Promise<{ agent: Agent; dispatcher: Dispatcher }> | undefined;

  constructor(opts: HttpApiOptions) {
    this.#opts = opts;
    this.#base = new URL(`${opts.url.replace(/\/$/, '')}/api2/json/`);
    this.#tracer = opts.tracer ?? trace.getTracer(INSTRUMENTATION);
  }

  /** Closes the keep-alive connections. */
  async close(): Promise<void> {
    const agent = this.#agent;
    this.#agent = undefined;
    if (agent !== undefined) await (await agent.catch(() => undefined))?.agent.close();
  }

  #getAgent(): Promise<{ agent: Agent; dispatcher: Dispatcher }> {
    if (this.#agent === undefined) {
      const p = this.#buildAgent();
      this.#agent = p;
      // A CA file that is missing now may land later: do not cache that failure.
      p.catch(() => {
        if (this.#agent === p) this.#agent = undefined;
      });
    }
    return this.#agent;
  }

  async #buildAgent(): Promise<{ agent: Agent; dispatcher: Dispatcher }> {
    let ca: string | undefined;
    if (this.#opts.caFile !== undefined) {
      try {
        ca = await readFile(this.#opts.caFile, 'utf8');
      } catch {
        throw new CaFileError('PROXMOX_CA_MISSING', `CA file ${this.#opts.caFile} cannot be read`);
      }
      try {
        new X509Certificate(ca);
      } catch {
        throw new CaFileError(
          'PROXMOX_CA_INVALID',
          `CA file ${this.#opts.caFile} holds no PEM certificate`,
        );
      }
    }
    const requestTimeout = this.#opts.requestTimeoutMs;
    const agent = new Agent({
      connections: CONNECTIONS_PER_HOST,
      allowH2: false,
      keepAliveTimeout: 90_000,
      headersTimeout: requestTimeout,
      bodyTimeout: requestTimeout,
      connect: {
        timeout: CONNECT_TIMEOUT_MS,
        rejectUnauthorized: this.#opts.insecureSkipTLSVerify !== true,
        ALPNProtocols: ['http/1.1'],
        ...(ca === undefined ? {} : { ca }),
      },
    });
    return { agent, dispatcher: agent.compose(tracingInterceptor(this.#tracer)) };
  }

  async #call<T>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    opts: { query?: Query; form?: Query; multipart?: FormData; signal?: AbortSignal | undefined },
  ): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.#base);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    opts.signal?.throwIfAborted();
    const [{ dispatcher }, token] = await Promise.all([
      this.#getAgent(),
      readToken(this.#opts.tokenFile),
    ]);
    const signals = [
      opts.signal,
      this.#opts.requestTimeoutMs > 0
        ? AbortSignal.timeout(this.#opts.requestTimeoutMs)
        : undefined,
    ].filter((s): s is AbortSignal => s !== undefined);
    const headers: Record<string, string> = {
      authorization: `PVEAPIToken=${token.line}`,
      accept: 'application/json',
    };
    let body: string | FormData | undefined;
    if (opts.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(opts.form).toString();
    } else if (opts.multipart !== undefined) body = opts.multipart;
    let res: Awaited<ReturnType<typeof fetch>>;
    try {
      res = await fetch(url, {
        method,
        headers,
        dispatcher,
        ...(body === undefined ? {} : { body }),
        ...(signals.length === 0 ? {} : { signal: AbortSignal.any(signals) }),
      });
    } catch (err) {
      throw scrub(unwrapFetchError(err), token);
    }
    const text = await res.text().catch((err: unknown) => {
      throw scrub(unwrapFetchError(err), token);
    });
    if (res.status < 200 || res.status > 299) {
      throw apiErrorFrom(res.status, res.statusText, text, token);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, 'the answer is not JSON');
    }
    return (parsed as { data: T }).data;
  }

  version(signal?: AbortSignal): Promise<{ version: string; release?: string | undefined }> {
    return this.#call('GET', 'version', { signal });
  }

  nodeStatus(
    req: { node: string },
    signal?: AbortSignal,
  ): Promise<{ kversion?: string | undefined; uptime?: number | undefined }> {
    return this.#call('GET', `nodes/${seg(req.node)}/status`, { signal });
  }

  storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus> {
    return this.#call('GET', `nodes/${seg(req.node)}/storage/${seg(req.storage)}/status`, {
      signal,
    });
  }

  clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]> {
    return this.#call('GET', 'cluster/resources', { query: { type: 'vm' }, signal });
  }

  async vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig> {
    const raw = await this.#call<Record<string, unknown>>('GET', `${vmPath(req)}/config`, {
      signal,
    });
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw ?? {})) {
      if (v !== null && v !== undefined) out[k] = String(v);
    }
    return out;
  }

  async setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ): Promise<void> {
    await this.#call('PUT', `${vmPath(req)}/config`, { form: { ...req.params }, signal });
  }

  clone(req: CloneParams, signal?: AbortSignal): Promise<string> {
    const form: Query = {
      newid: String(req.newid),
      name: req.name,
      description: req.description,
      full: '1',
    };
    if (req.storage !== undefined) form.storage = req.storage;
    if (req.target !== undefined) form.target = req.target;
    return this.#call('POST', `${vmPath(req)}/clone`, { form, signal });
  }

  resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string> {
    return this.#call('PUT', `${vmPath(req)}/resize`, {
      form: { disk: req.disk, size: req.size },
      signal,
    });
  }

  start(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#call('POST', `${vmPath(req)}/status/start`, { form: {}, signal });
  }

  stop(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#call('POST', `${vmPath(req)}/status/stop`, { form: {}, signal });
  }

  vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus> {
    return this.#call('GET', `${vmPath(req)}/status/current`, { signal });
  }

  destroy(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#call('DELETE', vmPath(req), {
      query: { purge: '1', 'destroy-unreferenced-disks': '1' },
      signal,
    });
  }

  taskStatus(req: { node: string; upid: string }, signal?: AbortSignal): Promise<TaskStatus> {
    return this.#call('GET', `nodes/${seg(req.node)}/tasks/${seg(req.upid)}/status`, { signal });
  }

  async agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]> {
    const data = await this.#call<{ result?: AgentInterface[] }>(
      'GET',
      `${vmPath(req)}/agent/network-get-interfaces`,
      { signal },
    );
    return data?.result ?? [];
  }

  uploadIso(
    req: { node: string; storage: string; filename: string; data: Uint8Array },
    signal?: AbortSignal,
  ): Promise<string> {
    const form = new FormData();
    form.set('content', 'iso');
    form.set(
      'filename',
      new Blob([req.data as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }),
      req.filename,
    );
    return this.#call('POST', `nodes/${seg(req.node)}/storage/${seg(req.storage)}/upload`, {
      multipart: form,
      signal,
    });
  }

  deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#call(
      'DELETE',
      `nodes/${seg(req.node)}/storage/${seg(req.storage)}/content/${seg(req.volid)}`,
      { signal },
    );
  }
}

/**
 * An undici interceptor that makes one `HTTP <METHOD>` CLIENT span per
 * request under the active span, and none when no span is active
 * (parent-gated). It records the method, host, port, path (without the
 * query) and response status; never a header, so never the token.
 */
export function tracingInterceptor(tracer: Tracer): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    if (trace.getActiveSpan() === undefined) return dispatch(opts, handler);
    const origin = new URL(String(opts.origin));
    const span = tracer.startSpan(
      `HTTP ${opts.method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': opts.method,
          'server.address': origin.hostname,
          'server.port': Number(origin.port || (origin.protocol === 'https:' ? 443 : 80)),
          'url.path': opts.path.split('?')[0] ?? opts.path,
        },
      },
      context.active(),
    );
    let ended = false;
    const end = (error?: Error) => {
      if (ended) return;
      ended = true;
      if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error.name });
      span.end();
    };
    return dispatch(opts, {
      onRequestStart: (c, ctx) => handler.onRequestStart?.(c, ctx),
      onRequestUpgrade: (c, status, headers, socket) =>
        handler.onRequestUpgrade?.(c, status, headers, socket),
      onResponseStarted: () => handler.onResponseStarted?.(),
      onBodySent: (chunk) => handler.onBodySent?.(chunk),
      onRequestSent: () => handler.onRequestSent?.(),
      onResponseStart: (c, status, headers, message) => {
        span.setAttribute('http.response.status_code', status);
        if (status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
        handler.onResponseStart?.(c, status, headers, message);
      },
      onResponseData: (c, chunk) => handler.onResponseData?.(c, chunk),
      onResponseEnd: (c, trailers) => {
        end();
        handler.onResponseEnd?.(c, trailers);
      },
      onResponseError: (c, error) => {
        end(error);
        handler.onResponseError?.(c, error);
      },
    });
  };
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

function vmPath(req: VmRef): string {
  return `nodes/${seg(req.node)}/qemu/${String(req.vmid)}`;
}

/** undici's fetch wraps network failures in `TypeError: fetch failed`; keep the cause. */
function unwrapFetchError(err: unknown): unknown {
  if (err instanceof TypeError && err.message === 'fetch failed' && err.cause !== undefined) {
    return err.cause;
  }
  return err;
}

/** Removes the token from an error's message, should a peer have echoed it. */
function scrub(err: unknown, token: Token): unknown {
  if (err instanceof Error && err.message.includes(token.line)) {
    err.message = err.message.split(token.line).join('[redacted]');
  }
  const secret = token.line.slice(token.id.length + 1);
  if (secret !== '' && err instanceof Error && err.message.includes(secret)) {
    err.message = err.message.split(secret).join('[redacted]');
  }
  return err;
}

function apiErrorFrom(status: number, reason: string, text: string, token: Token): ApiError {
  let message = reason.trim();
  let errors: Record<string, string> = {};
  // A 401 carries no body worth reading, and a careless proxy might echo the
  // credential there: the reason phrase is all that is kept.
  if (status !== 401 && text !== '') {
    try {
      const body = JSON.parse(text) as { message?: unknown; errors?: unknown };
      if (typeof body.message === 'string' && body.message.trim() !== '') {
        message = body.message.replace(/\n+$/, '').trim();
      }
      if (typeof body.errors === 'object' && body.errors !== null) {
        errors = Object.fromEntries(
          Object.entries(body.errors as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
        );
      }
    } catch {
      // Not JSON: the reason phrase stands.
    }
  }
  if (message === '') message = status === 401 ? 'authentication failed' : 'request failed';
  const secret = token.line.slice(token.id.length + 1);
  const clean = (s: string) => (secret === '' ? s : s.split(secret).join('[redacted]'));
  return new ApiError(
    status,
    clean(message),
    Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, clean(v)])),
  );
}
