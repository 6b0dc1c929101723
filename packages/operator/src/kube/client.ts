/**
 * The operator's way to the Kubernetes API server: the kubeconfig (or the
 * Pod's service account) read by `@kubernetes/client-node`, one keep-alive
 * HTTPS connection pool, a deadline per request, and failures turned into
 * {@link KubeApiError}s that name the operation and, for a 403, the RBAC
 * rule that grants it.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { Agent, type RequestOptions, request } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { DEFAULTS } from '../defaults.js';
import { hasCode, OperatorError, OperatorErrorCode } from '../errors.js';

/** How the client finds the cluster. */
export interface KubeClientOptions {
  /** A kubeconfig file; default `$KUBECONFIG`, `~/.kube/config`, then the Pod's service account. */
  readonly kubeconfig?: string | undefined;
  /** A context of the kubeconfig (default its current context). */
  readonly context?: string | undefined;
  /** The deadline of one request, answer included (default 30000 ms). */
  readonly requestTimeoutMs?: number | undefined;
  /** The field manager named on every write (default `proxy-op`). */
  readonly fieldManager?: string | undefined;
}

/** One event of a watch, as the API server sends it. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object; for `ERROR`, a Status (`code` 410 when the version asked for is too old). */
  readonly object: {
    readonly metadata?: { readonly resourceVersion?: string };
    readonly code?: number;
  };
}

/** One request: the operation's name (for errors) and what to send. */
export interface KubeRequest {
  /** What is being done, for people: `adding the finalizer to Proxy default/web`. */
  readonly operation: string;
  /** The HTTP method. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path from the server's root, with no query. */
  readonly path: string;
  /** Query parameters. */
  readonly query?: Readonly<Record<string, string>> | undefined;
  /** The body, sent as JSON. */
  readonly body?: unknown;
  /** Default `application/json`; patches name their type. */
  readonly contentType?: string | undefined;
  /** Aborts the request. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * A failed API request: the HTTP status (0 when the server could not be
 * reached), the Status `reason`, and a message that names the operation.
 */
export class KubeApiError extends OperatorError {
  /** Stable code of every Kubernetes API failure. */
  readonly code = OperatorErrorCode.KubeApi;
  /** HTTP status; 0 when no answer came (connection refused, timeout). */
  readonly status: number;
  /** The Status reason (`Conflict`, `Forbidden`, `NotFound`, ...), or `''`. */
  readonly reason: string;
  /** The operation that failed, as given to the request. */
  readonly operation: string;

  constructor(
    status: number,
    reason: string,
    operation: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.status = status;
    this.reason = reason;
    this.operation = operation;
  }

  /** Always `KubeApiError`. */
  override get name(): string {
    return 'KubeApiError';
  }

  /** True for a KubeApiError, also from another copy of this package. */
  static override isInstance(e: unknown): e is KubeApiError {
    return hasCode(e, OperatorErrorCode.KubeApi);
  }
}

/** True when `err` is a KubeApiError with this HTTP status. */
export function isStatus(err: unknown, status: number): boolean {
  return KubeApiError.isInstance(err) && err.status === status;
}

/** Whether client-node's default loading would find a cluster: `$KUBECONFIG`, `~/.kube/config`, or a Pod. */
function someConfig(): boolean {
  if ((process.env.KUBECONFIG ?? '') !== '') return true;
  if ((process.env.KUBERNETES_SERVICE_HOST ?? '') !== '') return true;
  return existsSync(join(homedir(), '.kube', 'config'));
}

/** Which rule of the shipped RBAC grants a verb on a resource: the hint a 403 carries. */
function rbacHint(message: string): string {
  if (!/cannot \S+ resource "/.test(message)) return '';
  return `; the operator's service account needs this right: apply the RBAC of deploy/base (or, for Pods, the kubernetes-provider component) and bind it to that account`;
}

/**
 * A small JSON client over one keep-alive connection pool. Credentials come
 * from the KubeConfig on every request (a rotated service-account token is
 * used at once); they are never logged or put into errors.
 */
export class KubeClient {
  /** `https://host:port`, without a trailing slash. */
  readonly server: string;
  /** The kubeconfig context's namespace, or the Pod's (`undefined` when neither says). */
  readonly namespace: string | undefined;
  /** The field manager of every write. */
  readonly fieldManager: string;
  /** The loaded kubeconfig, for client-node's informers. */
  readonly kubeConfig: KubeConfig;
  readonly #agent: Agent;
  readonly #timeoutMs: number;
  readonly #staticAuth: string | undefined;
  readonly #dynamicAuth: boolean;
  #closed = false;

  private constructor(
    kc: KubeConfig,
    tls: {
      ca?: unknown;
      cert?: unknown;
      key?: unknown;
      rejectUnauthorized?: boolean | undefined;
      servername?: string | undefined;
    },
    auth: string | undefined,
    opts: KubeClientOptions,
  ) {
    const cluster = kc.getCurrentCluster();
    if (cluster === null) throw new Error('the kubeconfig names no current cluster');
    this.server = cluster.server.replace(/\/+$/, '');
    this.kubeConfig = kc;
    const ctx = kc.getContextObject(kc.getCurrentContext());
    this.namespace = ctx?.namespace ?? undefined;
    this.fieldManager = opts.fieldManager ?? DEFAULTS.fieldManager;
    this.#timeoutMs = opts.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs;
    const user = kc.getCurrentUser();
    this.#dynamicAuth = user?.exec !== undefined || user?.authProvider !== undefined;
    this.#staticAuth = auth;
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: 16,
      ...(tls.ca !== undefined ? { ca: tls.ca as string } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert as string } : {}),
      ...(tls.key !== undefined ? { key: tls.key as string } : {}),
      ...(tls.rejectUnauthorized !== undefined
        ? { rejectUnauthorized: tls.rejectUnauthorized }
        : {}),
      ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
    });
  }

  /**
   * Loads the kubeconfig (`opts.kubeconfig`, else `$KUBECONFIG`,
   * `~/.kube/config`, else the Pod's service account) and builds a client.
   * Reads files only; nothing is dialled until the first request.
   */
  static async load(opts: KubeClientOptions = {}): Promise<KubeClient> {
    const { KubeConfig: Kc } = await import('@kubernetes/client-node');
    const kc = new Kc();
    if (opts.kubeconfig !== undefined) kc.loadFromFile(opts.kubeconfig);
    else if (!someConfig()) {
      throw new Error(
        'no Kubernetes cluster configured: give --kubeconfig, set KUBECONFIG, or run in a Pod (or run --standalone DIR without a cluster)',
      );
    } else kc.loadFromDefault();
    if (opts.context !== undefined) {
      if (kc.getContextObject(opts.context) === null) {
        throw new Error(`the kubeconfig has no context "${opts.context}"`);
      }
      kc.setCurrentContext(opts.context);
    }
    const cluster = kc.getCurrentCluster();
    if (cluster === null || kc.getCurrentUser() === null) {
      throw new Error(
        'no Kubernetes cluster configured: give --kubeconfig, set KUBECONFIG, or run in a Pod',
      );
    }
    if (!cluster.server.startsWith('https://')) {
      throw new Error(`the API server ${cluster.server} is not https; only https is used`);
    }
    const tls: RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    const auth = (tls.headers as Record<string, string> | undefined)?.Authorization;
    return new KubeClient(kc, tls, auth, opts);
  }

  async #authorization(): Promise<string | undefined> {
    if (!this.#dynamicAuth) return this.#staticAuth;
    // Token files (in a Pod) and exec plugins: client-node reads and caches them.
    const o: { headers?: Record<string, string> } = {};
    await this.kubeConfig.applyToHTTPSOptions(o);
    return o.headers?.Authorization;
  }

  /** Sends one request; resolves with the parsed JSON answer, rejects with a {@link KubeApiError}. */
  async request<T>(r: KubeRequest): Promise<T> {
    if (this.#closed)
      throw new KubeApiError(0, '', r.operation, `${r.operation}: the client is closed`);
    r.signal?.throwIfAborted();
    const url = new URL(this.server + r.path);
    for (const [k, v] of Object.entries(r.query ?? {})) url.searchParams.set(k, v);
    if (r.method !== 'GET' && r.method !== 'DELETE') {
      url.searchParams.set('fieldManager', this.fieldManager);
    }
    const payload = r.body === undefined ? undefined : JSON.stringify(r.body);
    const headers: Record<string, string> = { Accept: 'application/json' };
    const auth = await this.#authorization();
    if (auth !== undefined) headers.Authorization = auth;
    if (payload !== undefined) {
      headers['Content-Type'] = r.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    // A timer and a controller of our own, both gone when the request is: a burst of
    // requests leaves nothing waiting for the deadline.
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, this.#timeoutMs);
    const onAbort = () => ac.abort(r.signal?.reason);
    r.signal?.addEventListener('abort', onAbort, { once: true });
    const signal = ac.signal;
    let answer: { status: number; text: string };
    try {
      answer = await new Promise((resolve, reject) => {
        const req = request(
          url,
          { method: r.method, headers, agent: this.#agent, signal },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              text += d;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    } catch (err) {
      if (r.signal?.aborted) throw r.signal.reason;
      const why = timedOut
        ? `no answer within ${this.#timeoutMs} ms`
        : ((err as NodeJS.ErrnoException).code ?? (err as Error).message);
      throw new KubeApiError(
        0,
        '',
        r.operation,
        `${r.operation}: cannot reach the API server at ${this.server} (${why})`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onAbort);
    }
    let body: unknown;
    try {
      body = answer.text === '' ? undefined : JSON.parse(answer.text);
    } catch {
      body = undefined;
    }
    if (answer.status >= 200 && answer.status < 300) {
      if (body === undefined) {
        throw new KubeApiError(
          answer.status,
          '',
          r.operation,
          `${r.operation}: the API server answered ${answer.status} without JSON`,
        );
      }
      return body as T;
    }
    throw this.#failure(r.operation, answer.status, answer.text);
  }

  /** The error of an answer other than 2xx: its status, its Status reason and message. */
  #failure(operation: string, status: number, text: string): KubeApiError {
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const st = (body ?? {}) as { kind?: string; reason?: string; message?: string };
    const reason = st.kind === 'Status' && typeof st.reason === 'string' ? st.reason : '';
    const said =
      st.kind === 'Status' && typeof st.message === 'string' && st.message !== ''
        ? st.message
        : `HTTP ${status}`;
    return new KubeApiError(
      status,
      reason,
      operation,
      `${operation}: ${said}${status === 403 ? rbacHint(said) : ''}`,
    );
  }

  /**
   * Opens a watch of the collection `path` (`watch=true` with `query`) and
   * hands each event to `onEvent` as it comes. Resolves when the server
   * ends the stream (its `timeoutSeconds`); rejects with a
   * {@link KubeApiError} when it answers with anything but 200 (the
   * status and the operation in it, the RBAC rule for a 403), when the
   * connection fails, or when nothing came for `idleMs`; ends quietly when
   * `signal` aborts.
   */
  async watch(
    r: {
      readonly operation: string;
      readonly path: string;
      readonly query: Readonly<Record<string, string>>;
      readonly idleMs: number;
      readonly signal: AbortSignal;
    },
    onEvent: (event: WatchEvent) => void,
  ): Promise<void> {
    if (this.#closed)
      throw new KubeApiError(0, '', r.operation, `${r.operation}: the client is closed`);
    if (r.signal.aborted) return;
    const url = new URL(this.server + r.path);
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(r.query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { Accept: 'application/json' };
    const auth = await this.#authorization();
    if (auth !== undefined) headers.Authorization = auth;
    const ac = new AbortController();
    const onAbort = () => ac.abort(r.signal.reason);
    r.signal.addEventListener('abort', onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        timedOut = true;
        ac.abort(new DOMException('no event within the idle time', 'TimeoutError'));
      }, r.idleMs);
    };
    try {
      await new Promise<void>((resolve, reject) => {
        touch();
        const req = request(
          url,
          { method: 'GET', headers, agent: this.#agent, signal: ac.signal },
          (res) => {
            if (res.statusCode !== 200) {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (d: string) => {
                text += d;
              });
              res.on('end', () => reject(this.#failure(r.operation, res.statusCode ?? 0, text)));
              res.on('error', reject);
              return;
            }
            let rest = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              touch();
              const lines = (rest + d).split('\n');
              rest = lines.pop() ?? '';
              for (const line of lines) {
                if (line.trim() === '') continue;
                let event: WatchEvent;
                try {
                  event = JSON.parse(line) as WatchEvent;
                } catch {
                  continue;
                }
                onEvent(event);
              }
            });
            res.on('end', () => resolve());
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end();
      });
    } catch (err) {
      if (r.signal.aborted) return;
      if (KubeApiError.isInstance(err)) throw err;
      const why = timedOut
        ? `no event within ${r.idleMs} ms`
        : ((err as NodeJS.ErrnoException).code ?? (err as Error).message);
      throw new KubeApiError(
        0,
        '',
        r.operation,
        `${r.operation}: the watch on ${this.server} failed (${why})`,
        { cause: err },
      );
    } finally {
      clearTimeout(idle);
      r.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Closes the connection pool. */
  close(): void {
    this.#closed = true;
    this.#agent.destroy();
  }
}
