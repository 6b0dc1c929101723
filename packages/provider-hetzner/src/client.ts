/**
 * The HTTP layer of the production seam: JSON requests to the Hetzner
 * Cloud API over undici, with the API token read from its file for every
 * request (a rotated Secret is used at once) and declared secret each
 * time, error answers read into {@link HetznerApiError} with their
 * rate-limit headers, and requests that got no answer into
 * {@link TransportError}.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { SecretSet } from '@proxy-op/contract';
import { Agent, fetch } from 'undici';
import {
  HetznerApiError,
  type InvalidField,
  type RateLimit,
  TokenError,
  TransportError,
} from './errors.js';

/** Keep-alive connections to the API. */
export const CONNECTIONS = 4;
/** Connect and TLS handshake budget, in ms. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** The `User-Agent` of every request. */
export const USER_AGENT = 'proxy-op-provider-hetzner';

/** Options of {@link HetznerClient}. */
export interface ClientOptions {
  /** The API's base URL, `https://api.hetzner.cloud/v1`. */
  readonly endpoint: string;
  /** The file holding the API token (a mounted Secret). */
  readonly tokenFile: string;
  /** Where each token read is declared secret. */
  readonly secrets: SecretSet;
}

/** A request: method, path under the endpoint, query and JSON body. */
export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>> | undefined;
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
}

/** The most a token file may hold, in bytes. */
const MAX_TOKEN_BYTES = 4096;

/**
 * Reads the token from `path` for one request: trimmed, non-empty, one line.
 * The token is added to `secrets` before anything else can see it.
 */
export async function readTokenFile(
  path: string,
  secrets: SecretSet,
  signal?: AbortSignal,
): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, { encoding: 'utf8', signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    const code = (err as { code?: unknown }).code;
    throw new TokenError(
      path,
      code === 'ENOENT' ? 'does not exist' : `cannot be read (${String(code ?? 'error')})`,
    );
  }
  const token = text.trim();
  secrets.add(token);
  if (token === '') throw new TokenError(path, 'is empty');
  if (Buffer.byteLength(token) > MAX_TOKEN_BYTES || /[\s\0]/.test(token)) {
    throw new TokenError(path, 'does not hold a token (one line, no spaces)');
  }
  return token;
}

/** The rate-limit headers of an answer. */
export function rateLimitOf(headers: { get(name: string): string | null }): RateLimit | undefined {
  const int = (name: string) => {
    const v = headers.get(name);
    return v === null || !/^\d+$/.test(v.trim()) ? undefined : Number(v.trim());
  };
  const limit = int('ratelimit-limit');
  const remaining = int('ratelimit-remaining');
  const reset = int('ratelimit-reset');
  if (limit === undefined && remaining === undefined && reset === undefined) return undefined;
  return { limit, remaining, reset: reset === undefined ? undefined : new Date(reset * 1000) };
}

/**
 * The error of an error answer: the body's `error` object (`code`,
 * `message`, `details.fields`, `details.limits`) and the rate-limit
 * headers. A body that is not the API's error shape (a proxy's HTML page)
 * is `unknown`, with the HTTP status text as its message.
 */
export function apiErrorOf(
  request: string,
  status: number,
  statusText: string,
  text: string,
  rateLimit: RateLimit | undefined,
): HetznerApiError {
  let error: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body?.error === 'object' && body.error !== null) {
      error = body.error as Record<string, unknown>;
    }
  } catch {
    // not JSON: keep the status text
  }
  const details = (
    typeof error?.details === 'object' && error.details !== null ? error.details : {}
  ) as { fields?: unknown; limits?: unknown };
  const fields: InvalidField[] = Array.isArray(details.fields)
    ? details.fields.flatMap((f: unknown) => {
        const name = (f as { name?: unknown } | null)?.name;
        const messages = (f as { messages?: unknown } | null)?.messages;
        return typeof name === 'string'
          ? [
              {
                name,
                messages: Array.isArray(messages)
                  ? messages.filter((m): m is string => typeof m === 'string')
                  : [],
              },
            ]
          : [];
      })
    : [];
  const limits: string[] = Array.isArray(details.limits)
    ? details.limits.flatMap((l: unknown) => {
        const name = (l as { name?: unknown } | null)?.name;
        return typeof name === 'string' ? [name] : [];
      })
    : [];
  return new HetznerApiError({
    request,
    httpStatus: status,
    apiCode: typeof error?.code === 'string' ? error.code : 'unknown',
    apiMessage: typeof error?.message === 'string' ? error.message : statusText,
    fields,
    limits,
    rateLimit,
  });
}

/**
 * A client of the API: one undici `Agent` (keep-alive, {@link CONNECTIONS}
 * connections, {@link CONNECT_TIMEOUT_MS} to connect), the token read for
 * every request.
 */
export class HetznerClient {
  readonly #opts: ClientOptions;
  readonly #agent: Agent;

  constructor(opts: ClientOptions) {
    this.#opts = opts;
    this.#agent = new Agent({ connections: CONNECTIONS, connect: { timeout: CONNECT_TIMEOUT_MS } });
  }

  /** Closes the keep-alive connections. */
  async close(): Promise<void> {
    await this.#agent.close();
  }

  /**
   * Sends one request and resolves with the parsed JSON answer (undefined
   * for 204). An error answer rejects with {@link HetznerApiError}; no
   * answer at all with {@link TransportError}; a 2xx answer that is not
   * JSON with a `SyntaxError`. When the signal fires, the request is
   * aborted and the call rejects with the signal's reason.
   */
  async request(r: ApiRequest): Promise<unknown> {
    const url = new URL(`${this.#opts.endpoint}${r.path}`);
    for (const [k, v] of Object.entries(r.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const what = `${r.method} ${r.path}`;
    const token = await readTokenFile(this.#opts.tokenFile, this.#opts.secrets, r.signal);
    r.signal?.throwIfAborted();
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      'user-agent': USER_AGENT,
    };
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    let res: Awaited<ReturnType<typeof fetch>>;
    let text: string;
    try {
      res = await fetch(url, {
        method: r.method,
        headers,
        dispatcher: this.#agent,
        ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }),
        ...(r.signal === undefined ? {} : { signal: r.signal }),
      });
      text = await res.text();
    } catch (err) {
      if (r.signal?.aborted) throw r.signal.reason;
      throw new TransportError(what, errnoOf(err), err);
    }
    if (res.status < 200 || res.status > 299) {
      throw apiErrorOf(what, res.status, res.statusText, text, rateLimitOf(res.headers));
    }
    if (res.status === 204 || text === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SyntaxError(`${what}: the answer is not JSON`);
    }
  }
}

/** The system or undici error code in a fetch failure's cause chain (`ECONNREFUSED`). */
function errnoOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z0-9_]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
