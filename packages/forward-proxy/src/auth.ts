/**
 * Basic proxy authentication (RFC 9110 §11.7, RFC 7617): the
 * `Proxy-Authorization` of each request checked against the password file,
 * as Squid does with `basic_ncsa_auth`. A verification costs thousands of
 * SHA-512 rounds, so each result is kept for a while, keyed by a digest of
 * the header (never the header itself), and trusted only while the user's
 * line in the file is the one it was checked against.
 *
 * @module
 */
import { now as clock } from './clock.js';
import { verifyPassword } from './crypt.js';
import { crypto } from './lazy-crypto.js';
import { WatchedPasswordFile } from './password-file.js';

/** Proxy authentication, as `ForwardProxyOptions.auth` and the program's config file give it. */
export interface ProxyAuthOptions {
  /**
   * The realm, sent in `Proxy-Authenticate: Basic realm="<realm>"`:
   * 1 to 200 printable ASCII characters without `"` or `\`, not all
   * spaces (spaces at either end are left out of the header, as Squid
   * leaves them out).
   */
  readonly realm: string;
  /**
   * The password file: `username:hash` lines (SHA-512-crypt or
   * SHA-256-crypt hashes, as `hashPassword` makes), re-read when it
   * changes. It must be readable when the proxy starts.
   */
  readonly passwordFile: string;
  /**
   * How long a verification is kept, in ms (Squid's `credentialsttl`);
   * 60 000 when unset. A changed line in the file ends it at once.
   */
  readonly credentialsTtlMs?: number | undefined;
}

/** How long a verification is kept when `credentialsTtlMs` is unset, in ms. */
export const DEFAULT_CREDENTIALS_TTL_MS = 60_000;
/** Most verifications kept at once; the oldest go first. */
const MAX_CACHED = 4096;

/** A kept verification: whose, against which hash, its result, until when. */
interface Verified {
  readonly user: string;
  /** The user's hash it was checked against (undefined: no such user then). */
  readonly hash: string | undefined;
  readonly ok: boolean;
  readonly until: number;
}

/**
 * Why a realm would break the challenge header (or Squid's configuration
 * line), or undefined when it is fine: 1 to 200 printable ASCII
 * characters without `"` or `\`, the rule the provider contract holds
 * realms to.
 */
export function realmProblem(realm: unknown): string | undefined {
  if (typeof realm !== 'string') return 'must be a string';
  if (!/^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,200}$/.test(realm)) {
    return 'must be 1 to 200 printable ASCII characters without " or \\';
  }
  if (realm.trim() === '') return 'must hold more than spaces';
  return undefined;
}

/** The user and password bytes of a `Basic` credential, or undefined when it is none. */
function basicCredentials(value: string): { user: string; password: Buffer } | undefined {
  const m = /^basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(value);
  if (m === null) return undefined;
  const decoded = Buffer.from(m[1] as string, 'base64');
  const colon = decoded.indexOf(0x3a);
  if (colon <= 0) return undefined;
  return { user: decoded.toString('utf8', 0, colon), password: decoded.subarray(colon + 1) };
}

/** The proxy's authentication: checks credentials and keeps what it verified. */
export class ProxyAuth {
  /** The `Proxy-Authenticate` value a refused client gets. */
  readonly challenge: string;
  readonly #ttl: number;
  readonly #file: WatchedPasswordFile;
  readonly #cache = new Map<string, Verified>();

  /**
   * Reads the password file. Throws a `TypeError` naming the option for a
   * bad realm or TTL, an `Error` naming the path when the file cannot be read.
   */
  constructor(options: ProxyAuthOptions, warn: (message: string) => void) {
    const problem = realmProblem(options.realm);
    if (problem !== undefined) throw new TypeError(`auth.realm: ${problem}`);
    if (typeof options.passwordFile !== 'string' || options.passwordFile === '') {
      throw new TypeError('auth.passwordFile: must be a non-empty string');
    }
    const ttl = options.credentialsTtlMs ?? DEFAULT_CREDENTIALS_TTL_MS;
    if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 0) {
      throw new TypeError('auth.credentialsTtlMs: must be a number of ms, 0 or more');
    }
    this.#ttl = ttl;
    // Spaces at either end are dropped, as Squid drops them from its configuration line.
    this.challenge = `Basic realm="${options.realm.trim()}"`;
    this.#file = new WatchedPasswordFile(options.passwordFile, warn, (users) =>
      this.#forgetChanged(users),
    );
  }

  /**
   * The user a request's `Proxy-Authorization` value authenticates, or
   * undefined when it does not (none, not Basic, no such user, a wrong
   * password, or no readable password file).
   */
  check(value: string | undefined, now: number = clock()): string | undefined {
    const users = this.#file.users(now);
    if (value === undefined || users === undefined) return undefined;
    const key = crypto().hash('sha256', value, 'base64');
    const kept = this.#cache.get(key);
    if (kept !== undefined && kept.until > now && users.get(kept.user) === kept.hash) {
      return kept.ok ? kept.user : undefined;
    }
    const creds = basicCredentials(value);
    if (creds === undefined) return undefined;
    const hash = users.get(creds.user);
    const ok = hash !== undefined && verifyPassword(creds.password, hash);
    this.#cache.delete(key);
    if (this.#cache.size >= MAX_CACHED) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    this.#cache.set(key, { user: creds.user, hash, ok, until: now + this.#ttl });
    return ok ? creds.user : undefined;
  }

  /** Drops what was verified against a line that has changed or gone. */
  #forgetChanged(users: ReadonlyMap<string, string> | undefined): void {
    for (const [key, kept] of this.#cache) {
      if (users?.get(kept.user) !== kept.hash) this.#cache.delete(key);
    }
  }
}
