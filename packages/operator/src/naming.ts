/**
 * The instance name rule: `proxy-…` derived from a Proxy's namespace and
 * name, a lowercase DNS label of at most 63 characters, unique per
 * installation and stable across retries and restarts.
 *
 * @module
 */
import { createHash } from 'node:crypto';

/** The longest instance name (a DNS label). */
export const MAX_INSTANCE_NAME = 63;
const HASH_LEN = 8;

function sanitize(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * The instance name for the Proxy `namespace/name`:
 * `proxy-<namespace>-<name>-<hash>`, where the readable middle is lowercased,
 * has every run of other characters turned into one `-` and is shortened so
 * the whole fits in 63 characters, and `<hash>` is 8 hex digits of the
 * SHA-256 of `namespace/name`. The hash keeps names unique even when two
 * Proxies read alike once cleaned or cut (`a-b/c` and `a/b-c`); the name
 * depends on nothing else, so it is the same on every retry.
 */
export function instanceName(namespace: string, name: string): string {
  if (typeof namespace !== 'string' || typeof name !== 'string') {
    throw new TypeError('instanceName: namespace and name must be strings');
  }
  const hash = createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, HASH_LEN);
  const room = MAX_INSTANCE_NAME - 'proxy-'.length - 1 - HASH_LEN;
  const middle = sanitize(`${namespace}-${name}`).slice(0, room).replace(/-+$/, '');
  return middle === '' ? `proxy-${hash}` : `proxy-${middle}-${hash}`;
}
