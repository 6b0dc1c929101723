/**
 * The production adapter of the seam: the Proxmox VE REST API over undici.
 *
 * @module
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type Tracer, trace } from '@opentelemetry/api';
import { Agent, type Dispatcher, FormData, fetch } from 'undici';
import { readAnswer } from './answers.js';
import { ApiError, CaFileError } from './errors.js';
import type {
  AgentExecStatus,
  AgentInterface,
  CloneParams,
  ProxmoxApi,
  ResourceEntry,
  StorageStatus,
  TaskStatus,
  VmConfig,
  VmRef,
  VmStatus,
} from './seam.js';
import { readToken, type SecretSink } from './token.js';
import { tracingInterceptor } from './tracing.js';

const INSTRUMENTATION = '@proxy-op/provider-proxmox';

/** Connect and TLS handshake budget, in ms. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Keep-alive connections per host. */
export const CONNECTIONS_PER_HOST = 4;
/**
 * How long an idle connection is kept, in ms: under pveproxy's 5 s (it
 * closes a connection idle that long, without saying so in a Keep-Alive
 * header), so a request is never written to a connection the server is
 * closing.
 */
export const KEEP_ALIVE_MS = 4_000;

/** Options of {@link HttpProxmoxApi}. */
export interface HttpApiOptions {
  /** `https://host:8006`, without `/api2/json`. */
  readonly url: string;
  readonly tokenFile: string;
  readonly caFile?: string | undefined;
  readonly insecureSkipTLSVerify?: boolean | undefined;
  /**
   * How long undici waits for an answer's headers, and between chunks of its
   * body, in ms; 0 for no limit. The whole call's budget is the provider's
   * (`requestTimeoutSeconds`, applied to every seam call).
   */
  readonly requestTimeoutMs: number;
  /** Where the token is declared as a secret each time the file is read (a `SecretSet`). */
  readonly secrets?: SecretSink | undefined;
  /** Makes the `HTTP <METHOD>` spans; the global tracer when unset. */
  readonly tracer?: Tracer | undefined;
}

type Query = Record<string, string>;
/** A form's fields; a list is sent as the field repeated (pve-http-server reads it as an array). */
type Form = Record<string, string | readonly string[]>;

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
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: KEEP_ALIVE_MS,
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

  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    opts: { query?: Query; form?: Form; multipart?: FormData; signal?: AbortSignal | undefined },
  ): Promise<unknown> {
    const url = new URL(path.replace(/^\//, ''), this.#base);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    opts.signal?.throwIfAborted();
    const [{ dispatcher }, token] = await Promise.all([
      this.#getAgent(),
      readToken(this.#opts.tokenFile, this.#opts.secrets),
    ]);
    const headers: Record<string, string> = {
      authorization: `PVEAPIToken=${token.line}`,
      accept: 'application/json',
    };
    let body: string | FormData | undefined;
    if (opts.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      const fields = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.form)) {
        for (const one of typeof v === 'string' ? [v] : v) fields.append(k, one);
      }
      body = fields.toString();
    } else if (opts.multipart !== undefined) body = opts.multipart;
    let res: Awaited<ReturnType<typeof fetch>>;
    try {
      res = await fetch(url, {
        method,
        headers,
        dispatcher,
        ...(body === undefined ? {} : { body }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      });
    } catch (err) {
      throw unwrapFetchError(err);
    }
    const text = await res.text().catch((err: unknown) => {
      throw unwrapBodyError(err);
    });
    if (res.status < 200 || res.status > 299) throw apiErrorFrom(res.status, res.statusText, text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SyntaxError(`${method} ${url.pathname}: the answer is not JSON`);
    }
    if (typeof parsed !== 'object' || parsed === null) {
      throw new TypeError(`${method} ${url.pathname}: the answer has no data`);
    }
    return (parsed as { data?: unknown }).data;
  }

  async version(signal?: AbortSignal): Promise<{ version: string; release?: string | undefined }> {
    return readAnswer.version(await this.#call('GET', 'version', { signal }));
  }

  async nodeStatus(
    req: { node: string },
    signal?: AbortSignal,
  ): Promise<{ kversion?: string | undefined; uptime?: number | undefined }> {
    return readAnswer.nodeStatus(
      await this.#call('GET', `nodes/${seg(req.node)}/status`, { signal }),
    );
  }

  async storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus> {
    const path = `nodes/${seg(req.node)}/storage/${seg(req.storage)}/status`;
    return readAnswer.storageStatus(await this.#call('GET', path, { signal }));
  }

  async clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]> {
    const query = { type: 'vm' };
    return readAnswer.clusterResources(
      await this.#call('GET', 'cluster/resources', { query, signal }),
    );
  }

  async vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig> {
    return readAnswer.vmConfig(await this.#call('GET', `${vmPath(req)}/config`, { signal }));
  }

  async setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ): Promise<void> {
    await this.#call('PUT', `${vmPath(req)}/config`, { form: { ...req.params }, signal });
  }

  async clone(req: CloneParams, signal?: AbortSignal): Promise<string> {
    const form: Query = {
      newid: String(req.newid),
      name: req.name,
      description: req.description,
      full: '1',
    };
    if (req.storage !== undefined) form.storage = req.storage;
    if (req.target !== undefined) form.target = req.target;
    return readAnswer.clone(await this.#call('POST', `${vmPath(req)}/clone`, { form, signal }));
  }

  async resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string> {
    const form = { disk: req.disk, size: req.size };
    return readAnswer.resize(await this.#call('PUT', `${vmPath(req)}/resize`, { form, signal }));
  }

  async start(req: VmRef, signal?: AbortSignal): Promise<string> {
    const path = `${vmPath(req)}/status/start`;
    return readAnswer.start(await this.#call('POST', path, { form: {}, signal }));
  }

  async stop(req: VmRef, signal?: AbortSignal): Promise<string> {
    const path = `${vmPath(req)}/status/stop`;
    return readAnswer.stop(await this.#call('POST', path, { form: {}, signal }));
  }

  async vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus> {
    const path = `${vmPath(req)}/status/current`;
    return readAnswer.vmStatus(await this.#call('GET', path, { signal }));
  }

  async destroy(req: VmRef, signal?: AbortSignal): Promise<string> {
    const query = { purge: '1', 'destroy-unreferenced-disks': '1' };
    return readAnswer.destroy(await this.#call('DELETE', vmPath(req), { query, signal }));
  }

  async taskStatus(req: { node: string; upid: string }, signal?: AbortSignal): Promise<TaskStatus> {
    const path = `nodes/${seg(req.node)}/tasks/${seg(req.upid)}/status`;
    return readAnswer.taskStatus(await this.#call('GET', path, { signal }));
  }

  async agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]> {
    const path = `${vmPath(req)}/agent/network-get-interfaces`;
    return readAnswer.agentNetworkInterfaces(await this.#call('GET', path, { signal }));
  }

  async agentExec(
    req: VmRef & { command: readonly string[] },
    signal?: AbortSignal,
  ): Promise<{ pid: number }> {
    const form = { command: req.command };
    const path = `${vmPath(req)}/agent/exec`;
    return readAnswer.agentExec(await this.#call('POST', path, { form, signal }));
  }

  async agentExecStatus(
    req: VmRef & { pid: number },
    signal?: AbortSignal,
  ): Promise<AgentExecStatus> {
    const query = { pid: String(req.pid) };
    const path = `${vmPath(req)}/agent/exec-status`;
    return readAnswer.agentExecStatus(await this.#call('GET', path, { query, signal }));
  }

  async agentFileWrite(
    req: VmRef & { file: string; content: string; encode: boolean },
    signal?: AbortSignal,
  ): Promise<void> {
    const form = { file: req.file, content: req.content, encode: req.encode ? '1' : '0' };
    const path = `${vmPath(req)}/agent/file-write`;
    return readAnswer.agentFileWrite(await this.#call('POST', path, { form, signal }));
  }

  async uploadIso(
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
    const path = `nodes/${seg(req.node)}/storage/${seg(req.storage)}/upload`;
    return readAnswer.uploadIso(await this.#call('POST', path, { multipart: form, signal }));
  }

  async deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string> {
    const path = `nodes/${seg(req.node)}/storage/${seg(req.storage)}/content/${seg(req.volid)}`;
    return readAnswer.deleteVolume(await this.#call('DELETE', path, { signal }));
  }
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

/**
 * A body that stopped short (`TypeError: terminated`) is a broken
 * connection, not an unreadable answer: keep its cause.
 */
function unwrapBodyError(err: unknown): unknown {
  if (err instanceof TypeError && err.cause !== undefined) return err.cause;
  return err;
}

/**
 * The {@link ApiError} for an answer other than 2xx: the status, the
 * body's `message` without its newline (the reason phrase when there is no
 * JSON body, and always for a 401), and a 400's field errors.
 */
export function apiErrorFrom(status: number, reason: string, text: string): ApiError {
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
  return new ApiError(status, message, errors);
}
