/**
 * What the access log records of a request's target: the scheme, host and
 * path of an absolute URI, or a CONNECT's `host:port`, never user info
 * (`user:password@`) or a query (either may hold a credential). The access
 * log applies it to every line it writes, so no path of the proxy can log
 * more.
 *
 * @module
 */

/** The target as the access log records it. */
export function targetForLog(target: string): string {
  let t = target;
  const q = t.search(/[?#]/);
  if (q >= 0) t = t.slice(0, q);
  // The authority runs from after `scheme://` (or from the start, for a CONNECT's) to the path.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(t);
  const from = scheme === null ? 0 : scheme[0].length;
  if (from > 0 || !t.startsWith('/')) {
    const slash = t.indexOf('/', from);
    const end = slash < 0 ? t.length : slash;
    const at = t.lastIndexOf('@', end - 1);
    if (at >= from) t = t.slice(0, from) + t.slice(at + 1);
  }
  return t;
}
