/**
 * The SDK's failures as the provider's errors: an HTTP error answer is a
 * {@link ComputeApiError} that keeps only the status, the gRPC code, the
 * reasons and the API's message; a 200 answer the client could not decode
 * is the `TypeError` or `SyntaxError` the operation shell makes a
 * malformed answer.
 *
 * @module
 */
import { ComputeApiError } from './errors.js';

const RAW_PAYLOAD = Symbol.for('google-gax.rawHttpResponsePayload');
const DECODE_FAILURE = /Received null|malformed response|fromProto3JSON|cannot contain value/;

interface ClientError {
  readonly message: string;
  readonly code?: unknown;
  readonly httpStatusCode?: unknown;
  readonly cause?: unknown;
  readonly [RAW_PAYLOAD]?: unknown;
}

/**
 * The error to throw for a failed SDK call: a {@link ComputeApiError} with
 * the HTTP status, gRPC code, reasons and message; a decoding failure of a
 * 200 answer as the `SyntaxError` or `TypeError` it was (the operation
 * shell makes it a malformed answer). The client's error is not kept: it
 * holds the request body and headers. `budget` is the call's budget, which
 * the client's own deadline (gRPC code 4) is set to.
 */
export function translate(err: unknown, budget: number): unknown {
  if (ComputeApiError.isInstance(err) || err instanceof TypeError || err instanceof SyntaxError) {
    return err;
  }
  if (err === null || typeof err !== 'object') return err;
  const e = err as ClientError;
  if (typeof e.message !== 'string') return err;
  const grpcCode = typeof e.code === 'number' ? e.code : undefined;
  if (typeof e.httpStatusCode === 'number') {
    const body = payloadOf(e[RAW_PAYLOAD]);
    return new ComputeApiError({
      message: body.message ?? e.message,
      httpStatus: e.httpStatusCode,
      grpcCode,
      reasons: body.reasons,
      status: body.status,
    });
  }
  const cause = e.cause;
  if (cause instanceof SyntaxError) return new SyntaxError(cause.message);
  if (cause instanceof TypeError || cause instanceof RangeError) {
    return new TypeError(cause.message);
  }
  // The client's decoder of a 200 answer throws plain errors for a null body or a field of
  // the wrong type; a transport failure never says this.
  if (DECODE_FAILURE.test(e.message)) {
    return new TypeError(`the API's answer could not be read: ${e.message}`);
  }
  if (grpcCode === 4) {
    return new ComputeApiError({ message: `no answer within ${budget} ms`, grpcCode });
  }
  return new ComputeApiError({ message: e.message, grpcCode });
}

/** The `message`, `status` and `errors[].reason` of an error body, when it is one. */
function payloadOf(raw: unknown): { message?: string; status?: string; reasons: string[] } {
  let json: unknown = raw;
  if (typeof raw === 'string') {
    try {
      json = JSON.parse(raw);
    } catch {
      return { reasons: [] };
    }
  }
  const error = (json as { error?: unknown } | null)?.error;
  if (error === null || typeof error !== 'object') return { reasons: [] };
  const o = error as { message?: unknown; status?: unknown; errors?: unknown };
  const reasons = Array.isArray(o.errors)
    ? o.errors
        .map((x) => (x as { reason?: unknown } | null)?.reason)
        .filter((r): r is string => typeof r === 'string')
    : [];
  return {
    ...(typeof o.message === 'string' ? { message: o.message } : {}),
    ...(typeof o.status === 'string' ? { status: o.status } : {}),
    reasons,
  };
}
