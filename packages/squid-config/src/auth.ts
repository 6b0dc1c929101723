/**
 * Basic authentication in a Squid configuration: Squid's own
 * `basic_ncsa_auth` helper over a password file of `username:hash` lines
 * (SHA-512-crypt hashes, which the helper re-reads when the file's
 * modification time changes), and access rules where both the source and
 * the user must hold: a source outside the allowed ones is denied (403)
 * before any credential is asked for, an allowed one is asked (407)
 * before its destination is looked at.
 *
 * @module
 */

/** Basic authentication for a Squid. */
export interface SquidAuth {
  /**
   * The realm Squid names in `Proxy-Authenticate: Basic realm="<realm>"`:
   * 1 to 200 printable ASCII characters without `"` or `\`, not all
   * spaces (Squid drops spaces at either end).
   */
  readonly realm: string;
  /**
   * The password file, an absolute path without spaces: in a container
   * {@link CONTAINER_PASSWORD_FILE}, on a machine {@link SERVICE_PASSWORD_FILE}.
   */
  readonly passwordFile: string;
  /**
   * How long Squid trusts a verified credential before it asks the helper
   * again, in whole seconds (`credentialsttl`); 60 when unset. A user
   * removed from the file is still let in for up to this long.
   */
  readonly credentialsTtlSeconds?: number | undefined;
  /** The helper program; `/usr/lib/squid/basic_ncsa_auth` (Debian's) when unset. */
  readonly helper?: string | undefined;
  /** Most helper processes at once (`children`), 1 to 100; 4 when unset. */
  readonly children?: number | undefined;
}

/**
 * The password file of a Squid in a container: a file in a directory where
 * a Secret is mounted whole (a directory mount, not `subPath`), so the
 * kubelet's atomic swap of the Secret's files is seen.
 */
export const CONTAINER_PASSWORD_FILE = '/etc/squid/auth/passwd';

/** The password file of the Squid service of a Debian or Ubuntu machine. */
export const SERVICE_PASSWORD_FILE = '/etc/squid/passwd';

/** What `auth` is when a field is unset. */
export const AUTH_DEFAULTS = Object.freeze({
  credentialsTtlSeconds: 60,
  helper: '/usr/lib/squid/basic_ncsa_auth',
  children: 4,
});

/** A configuration's authentication lines, by where they go. */
export interface SquidAuthLines {
  /** `auth_param` lines, before any ACL. */
  readonly params: readonly string[];
  /** The `proxy_auth` ACL. */
  readonly acls: readonly string[];
  /** The rule that asks an allowed client for a credential (407), before the destination rules. */
  readonly challenge: string;
  /** The rule that takes the place of the sources-only allow. */
  readonly allow: string;
}

/** An absolute path Squid's `program` line can hold (it splits its arguments at spaces). */
function checkPath(field: string, path: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters it looks for
  if (typeof path !== 'string' || !/^\/[^\s\u0000-\u001f\u007f#"\\]*$/.test(path)) {
    throw new RangeError(
      `auth.${field}: must be an absolute path without spaces, quotes, # or control characters`,
    );
  }
  return path;
}

function checkInteger(field: string, n: number, min: number, max: number): number {
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new RangeError(`auth.${field}: ${String(n)} is not a whole number from ${min} to ${max}`);
  }
  return n;
}

/** The authentication lines of `auth`; throws a `RangeError` naming the field that is wrong. */
export function squidAuthLines(auth: SquidAuth): SquidAuthLines {
  if (
    typeof auth.realm !== 'string' ||
    !/^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,200}$/.test(auth.realm) ||
    auth.realm.trim() === ''
  ) {
    throw new RangeError(
      'auth.realm: must be 1 to 200 printable ASCII characters without " or \\, not all spaces (it is written into a configuration line and a header)',
    );
  }
  const file = checkPath('passwordFile', auth.passwordFile);
  const helper = checkPath('helper', auth.helper ?? AUTH_DEFAULTS.helper);
  const ttl = checkInteger(
    'credentialsTtlSeconds',
    auth.credentialsTtlSeconds ?? AUTH_DEFAULTS.credentialsTtlSeconds,
    1,
    86_400,
  );
  const children = checkInteger('children', auth.children ?? AUTH_DEFAULTS.children, 1, 100);
  return {
    params: [
      `auth_param basic program ${helper} ${file}`,
      `auth_param basic children ${children} startup=1 idle=1`,
      `auth_param basic realm ${auth.realm}`,
      `auth_param basic credentialsttl ${ttl} seconds`,
      'auth_param basic casesensitive on',
    ],
    acls: ['acl proxy_op_auth proxy_auth REQUIRED'],
    challenge: 'http_access deny !proxy_op_auth',
    allow: 'http_access allow proxy_op_allowed proxy_op_auth',
  };
}
