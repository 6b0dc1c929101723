/**
 * The `hetzner` provider's backend errors: what the client throws for an
 * error answer of the Hetzner Cloud API, a request that got no answer, or
 * a token file that cannot be used. Each is branded (`isInstance` works
 * across two installed copies of the package), has a stable `code`, and is
 * the `cause` of the ProviderError a user sees. Also the safe facts of a
 * failure for a log line.
 *
 * @module
 */
import { BackendError } from '@proxy-op/contract';

/** One entry of an `invalid_input` answer's `details.fields`: a request field and what is wrong with it. */
export interface InvalidField {
  /** The request field (`labels`, `server_type`, `user_data`). */
  readonly name: string;
  /** What the API says about it (`invalid label value`); may be empty. */
  readonly messages: readonly string[];
}

/** The rate-limit headers of an answer: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`. */
export interface RateLimit {
  /** Requests per hour (`RateLimit-Limit`). */
  readonly limit: number | undefined;
  /** Requests left in the current window (`RateLimit-Remaining`). */
  readonly remaining: number | undefined;
  /** When the limit has recovered in full (`RateLimit-Reset`, a UNIX time). */
  readonly reset: Date | undefined;
}

/** What {@link HetznerApiError} is built from. */
export interface HetznerApiErrorOptions {
  /** The HTTP status of the answer. */
  readonly httpStatus: number;
  /** The body's `error.code` (`not_found`, `rate_limit_exceeded`, ...); `unknown` when the body had none. */
  readonly apiCode: string;
  /** The body's `error.message`. */
  readonly apiMessage: string;
  /** `details.fields` of an `invalid_input` or `uniqueness_error` answer. */
  readonly fields?: readonly InvalidField[] | undefined;
  /** `details.limits[].name` of a `resource_limit_exceeded` answer. */
  readonly limits?: readonly string[] | undefined;
  /** The answer's rate-limit headers. */
  readonly rateLimit?: RateLimit | undefined;
  /** The request, for the message: `POST /servers`. */
  readonly request: string;
}

/**
 * An error answer of the Hetzner Cloud API: its HTTP status, the body's
 * `error.code` and `error.message`, the fields an `invalid_input` names,
 * and the rate-limit headers. The message says what the API said and,
 * for a rate limit, when it recovers; it never holds a header or a
 * request body.
 */
export class HetznerApiError extends BackendError {
  /** `@proxy-op/provider-hetzner.HetznerApiError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-hetzner.HetznerApiError';
  /** Always `HETZNER_API`. */
  readonly code = 'HETZNER_API';
  /** The HTTP status. */
  readonly httpStatus: number;
  /** The API's error code (`not_found`, `uniqueness_error`, ...). */
  readonly apiCode: string;
  /** The API's message, as it wrote it. */
  readonly apiMessage: string;
  /** The fields an `invalid_input` (or `uniqueness_error`) answer names; empty when none. */
  readonly fields: readonly InvalidField[];
  /** The limits a `resource_limit_exceeded` answer names; empty when none. */
  readonly limits: readonly string[];
  /** The answer's rate-limit headers, when it had them. */
  readonly rateLimit: RateLimit | undefined;
  constructor(o: HetznerApiErrorOptions) {
    super(apiErrorMessage(o));
    this.httpStatus = o.httpStatus;
    this.apiCode = o.apiCode;
    this.apiMessage = o.apiMessage;
    this.fields = o.fields ?? [];
    this.limits = o.limits ?? [];
    this.rateLimit = o.rateLimit;
  }
}

/** The message of an error answer: the API's words, its code and status, and what to do about it. */
function apiErrorMessage(o: HetznerApiErrorOptions): string {
  let text = `${o.request}: ${o.apiMessage === '' ? 'no message' : o.apiMessage} (${o.apiCode}, HTTP ${o.httpStatus})`;
  if (o.fields !== undefined && o.fields.length > 0) {
    const named = o.fields.map((f) =>
      f.messages.length > 0 ? `${f.name}: ${f.messages.join(', ')}` : f.name,
    );
    text += `; fields: ${named.join('; ')}`;
  }
  if (o.limits !== undefined && o.limits.length > 0) text += `; limits: ${o.limits.join(', ')}`;
  if (o.apiCode === 'rate_limit_exceeded') {
    const r = o.rateLimit;
    const per = r?.limit === undefined ? '' : ` of ${r.limit} requests per hour`;
    text +=
      r?.reset === undefined
        ? `; the rate limit${per} was reached`
        : `; the rate limit${per} was reached, and it recovers by ${r.reset.toISOString()}`;
  }
  return text;
}

/**
 * A request that got no answer: the connection was refused or reset, the
 * name did not resolve, TLS failed. `cause` is undici's error.
 */
export class TransportError extends BackendError {
  /** `@proxy-op/provider-hetzner.TransportError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-hetzner.TransportError';
  /** Always `HETZNER_TRANSPORT`. */
  readonly code = 'HETZNER_TRANSPORT';
  /** The system error code (`ECONNREFUSED`, `ENOTFOUND`, ...), when there was one. */
  readonly errno: string | undefined;
  constructor(request: string, errno: string | undefined, cause: unknown) {
    super(`${request}: no answer from the API${errno === undefined ? '' : ` (${errno})`}`, {
      cause,
    });
    this.errno = errno;
  }
}

/** The token file cannot be used: missing, unreadable or empty. */
export class TokenError extends BackendError {
  /** `@proxy-op/provider-hetzner.TokenError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/provider-hetzner.TokenError';
  /** Always `HETZNER_TOKEN`. */
  readonly code = 'HETZNER_TOKEN';
  /** The token file's path. */
  readonly path: string;
  constructor(path: string, why: string) {
    super(`the API token file ${path} ${why}`);
    this.path = path;
  }
}

/** Safe facts about a failed call for its log line: status and API code, never the message. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (HetznerApiError.isInstance(err)) {
    const out: Record<string, string | number> = {
      error: err.name,
      httpStatus: err.httpStatus,
      apiCode: err.apiCode,
    };
    if (err.fields.length > 0) out.fields = err.fields.map((f) => f.name).join(',');
    if (err.rateLimit?.reset !== undefined) out.rateLimitReset = err.rateLimit.reset.toISOString();
    return out;
  }
  if (TransportError.isInstance(err)) {
    return err.errno === undefined ? { error: err.name } : { error: err.name, errno: err.errno };
  }
  if (err instanceof Error) return { error: err.name };
  return { error: typeof err };
}
