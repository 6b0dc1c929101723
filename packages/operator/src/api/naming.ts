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

/** The suffix of the second name a Proxy's instance can have (`r` is not a hex digit). */
const SECOND = '-r';

/**
 * The instance name for the Proxy `namespace/name`:
 * `proxy-<namespace>-<name>-<hash>`, where the readable middle is lowercased,
 * has every run of other characters turned into one `-` and is shortened so
 * the whole fits in 63 characters, and `<hash>` is 8 hex digits of the
 * SHA-256 of `namespace/name`. The hash keeps names unique even when two
 * Proxies read alike once cleaned or cut (`a-b/c` and `a/b-c`); the name
 * depends on nothing else, so it is the same on every retry.
 *
 * `slot` 1 is the Proxy's second name, `proxy-<namespace>-<name>-<hash>-r`
 * (the middle cut two characters sooner): the instance made beside the
 * first while a provider that cannot change a running proxy's credentials
 * rotates them make-before-break. Rotations alternate between the two.
 */
export function instanceName(namespace: string, name: string, slot: 0 | 1 = 0): string {
  if (typeof namespace !== 'string' || typeof name !== 'string') {
    throw new TypeError('instanceName: namespace and name must be strings');
  }
  const hash = createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, HASH_LEN);
  const suffix = slot === 1 ? SECOND : '';
  const room = MAX_INSTANCE_NAME - 'proxy-'.length - 1 - HASH_LEN - suffix.length;
  const middle = sanitize(`${namespace}-${name}`).slice(0, room).replace(/-+$/, '');
  return `${middle === '' ? `proxy-${hash}` : `proxy-${middle}-${hash}`}${suffix}`;
}
