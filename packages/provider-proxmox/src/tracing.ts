/**
 * The client spans: one `HTTP <METHOD>` CLIENT span per request, made by an
 * undici interceptor, parent-gated.
 *
 * @module
 */
import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';

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
