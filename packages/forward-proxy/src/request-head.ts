/**
 * The head of a forwarded request, as it leaves the proxy: to an origin,
 * origin-form with `Host` from the URI; to a parent proxy, absolute-form
 * with the parent's credential. Hop-by-hop fields go either way, and
 * `Via` gets the proxy's entry.
 *
 * @module
 */
import { endToEndFields, fieldList, type RequestHead } from './http1.js';
import type { Parent } from './parents.js';
import type { HttpTarget } from './target.js';

const SKIP_REQUEST: ReadonlySet<string> = new Set(['host', 'via', 'content-length']);

/**
 * The head sent on: to the origin, origin-form with Host from the URI; to
 * a parent, absolute-form with its credential (and without the session
 * field). Hop-by-hop fields are gone either way.
 */
export function requestHead(
  head: RequestHead,
  target: HttpTarget,
  parent?: Parent,
  sessionHeader?: string,
): string {
  const f = head.framing;
  const framing =
    f.kind === 'length'
      ? `Content-Length: ${f.length}\r\n`
      : f.kind === 'chunked'
        ? `Transfer-Encoding: ${head.transferEncoding}\r\n`
        : '';
  const via = fieldList(head, 'via');
  const ours = `1.${head.minor} proxy-op`;
  const uri = parent === undefined ? target.path : `http://${target.authority}${target.path}`;
  const skip =
    parent === undefined || sessionHeader === undefined
      ? SKIP_REQUEST
      : new Set([...SKIP_REQUEST, sessionHeader]);
  return (
    `${head.method} ${uri} HTTP/1.1\r\nHost: ${target.authority}\r\n` +
    `${endToEndFields(head, skip)}${framing}Via: ${via === '' ? ours : `${via}, ${ours}`}\r\n` +
    `${parent?.authField ?? ''}Connection: keep-alive\r\n\r\n`
  );
}
