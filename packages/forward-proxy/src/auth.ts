/**
 * Basic proxy authentication (RFC 9110 §11.7, RFC 7617): the
 * `Proxy-Authorization` of each request checked against the password file,
 * as Squid does with `basic_ncsa_auth`. A verification costs thousands of
 * SHA-512 rounds, so a success is kept for a while, keyed by a keyed digest
 * of the header (never the header itself), and trusted only while the
 * user's line in the file is the one it was checked against.
 *
 * What a check may cost is not the client's choice: a header longer than
 * `maxAuthorizationBytes` is refused unread; a verification runs in slices
 * of about a millisecond with the event loop handed back between them; an
 * unknown user is verified against a stand-in hash, so it costs what a
 * known one does and tells nothing; failed checks per source are bounded
 * (`FailureLimit`: 429 once a source's bucket is empty); and at most
 * {@link MAX_VERIFYING} verifications run at once (503 beyond).
 *
 * @module
 */
import { verifyPasswordSliced } from '@proxy-op/htpasswd';
import { FailureLimit } from './auth-limit.js';
import { now as clock } from './clock.js';
import { crypto } from './lazy-crypto.js';
import { WatchedPasswordFile } from './password-file.js';
import { parseUserParams, splitUserName, type UserParams } from './user-params.js';

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
/** Verifications running at once, at most; a check beyond them is answered 503. */
export const MAX_VERIFYING = 32;
/**
 * What an unknown user's password is verified against: a well-formed
 * SHA-512-crypt hash with the default rounds, which no password matches
 * (the result is thrown away anyway), so the check costs what a known
 * user's does.
 */
const STAND_IN_HASH = `$6$${'.'.repeat(16)}$${'.'.repeat(86)}`;

/** The bounds of the checks, from the proxy's limits. */
export interface AuthBounds {
  readonly maxAuthorizationBytes: number;
  readonly maxAuthFailures: number;
  readonly authFailureRefillMs: number;
}

/** The default {@link AuthBounds} (as `DEFAULT_LIMITS` has them). */
export const DEFAULT_AUTH_BOUNDS: AuthBounds = {
  maxAuthorizationBytes: 1024,
  maxAuthFailures: 10,
  authFailureRefillMs: 6_000,
};

/** What a check decided. */
export type AuthOutcome =
  /** The credential holds: the user it names, and the parameters in its user name. */
  | { readonly kind: 'user'; readonly user: string; readonly params: UserParams }
  /** The credential holds, but a parameter in its user name does not: 407 naming it. */
  | { readonly kind: 'bad-parameter'; readonly problem: string }
  /** No credential, or one that does not hold: 407. */
  | { readonly kind: 'refused' }
  /** The source has failed too often: 429, for `retryAfterMs`. */
  | { readonly kind: 'limited'; readonly retryAfterMs: number }
  /** Too many verifications run already: 503. */
  | { readonly kind: 'busy' };

const REFUSED: AuthOutcome = Object.freeze({ kind: 'refused' });
const BUSY: AuthOutcome = Object.freeze({ kind: 'busy' });

/** A kept success: whose, against which hash, until when, and what it was answered. */
interface Verified {
  readonly user: string;
  readonly answer: AuthOutcome;
  /** The user's hash it was checked against. */
  readonly hash: string;
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
  /** Verifications running, by the key of their header (one per header at a time). */
  readonly #verifying = new Map<string, Promise<boolean>>();
  readonly #bounds: AuthBounds;
  readonly #failures: FailureLimit;
  /** The key of the cache's digests, made when the first credential comes. */
  #key: Buffer | undefined;

  /**
   * Reads the password file. Throws a `TypeError` naming the option for a
   * bad realm or TTL, an `Error` naming the path when the file cannot be read.
   */
  constructor(
    options: ProxyAuthOptions,
    warn: (message: string) => void,
    bounds: AuthBounds = DEFAULT_AUTH_BOUNDS,
  ) {
    this.#bounds = bounds;
    this.#failures = new FailureLimit(bounds.maxAuthFailures, bounds.authFailureRefillMs);
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
   * Checks a request's `Proxy-Authorization` value from `source` (the key
   * the proxy counts a source's failures by): at once when the answer is known (no credential, a
   * kept success, a header too long, a source that failed too often),
   * else once the password is verified. Missing credentials are no
   * failure (a client's first request usually has none); every other
   * refusal takes one of the source's tokens.
   */
  check(
    value: string | undefined,
    source: string,
    now: number = clock(),
  ): AuthOutcome | Promise<AuthOutcome> {
    const users = this.#file.users(now);
    if (value === undefined || users === undefined) return REFUSED;
    if (value.length > this.#bounds.maxAuthorizationBytes) return this.#failed(source, now);
    const key = this.#digest(value);
    const kept = this.#cache.get(key);
    const known = kept !== undefined && users.get(kept.user) === kept.hash;
    if (known && kept.until > now) return kept.answer;
    const creds = basicCredentials(value);
    if (creds === undefined) return this.#failed(source, now);
    // The user is the longest part of the user name that the file knows; the rest is parameters.
    const { user, rest } = splitUserName(creds.user, (u) => users.has(u));
    const hash = users.get(user);
    let verifying = this.#verifying.get(key);
    // A header that held when it was last verified (its time is up, its line unchanged) is
    // verified again without a token: it is no guess, and its client shares a source with others.
    // One verification per header runs at a time, and a check that joins it takes no token.
    const charged = !known && verifying === undefined;
    if (charged) {
      const wait = this.#failures.take(source, now);
      if (wait !== undefined) return { kind: 'limited', retryAfterMs: wait };
    }
    if (verifying === undefined) {
      if (this.#verifying.size >= MAX_VERIFYING) {
        if (charged) this.#failures.give(source, now);
        return BUSY;
      }
      verifying = verifyPasswordSliced(creds.password, hash ?? STAND_IN_HASH).then(
        (ok) => ok && hash !== undefined,
      );
      this.#verifying.set(key, verifying);
      const started = verifying;
      void started.then(() => {
        if (this.#verifying.get(key) === started) this.#verifying.delete(key);
      });
    }
    return verifying.then((ok): AuthOutcome => {
      if (!ok || hash === undefined) return REFUSED;
      if (charged) this.#failures.give(source, now);
      // Trusted later only while the user's line is still the one it was checked against.
      this.#cache.delete(key);
      if (this.#cache.size >= MAX_CACHED) {
        const oldest = this.#cache.keys().next();
        if (oldest.done !== true) this.#cache.delete(oldest.value);
      }
      const params = parseUserParams(rest);
      const answer: AuthOutcome =
        'problem' in params
          ? { kind: 'bad-parameter', problem: params.problem }
          : { kind: 'user', user, params };
      this.#cache.set(key, { user, answer, hash, until: now + this.#ttl });
      return answer;
    });
  }

  /**
   * The answer to a refused check: 407 with the challenge, 429 with
   * `Retry-After` for a source that failed too often, 503 when too many
   * verifications run; `fields` are header lines (each ending in CRLF).
   */
  refusal(o: Exclude<AuthOutcome, { kind: 'user' }>): {
    status: number;
    text: string;
    fields: string;
  } {
    if (o.kind === 'bad-parameter') {
      // The password held: the answer names the parameter, and the client may try again.
      return {
        status: 407,
        text: `${o.problem}\n`,
        fields: `Proxy-Authenticate: ${this.challenge}\r\n`,
      };
    }
    if (o.kind === 'limited') {
      const seconds = Math.max(1, Math.ceil(o.retryAfterMs / 1000));
      const text = 'too many failed credentials from this source; try again later\n';
      return { status: 429, text, fields: `Retry-After: ${seconds}\r\n` };
    }
    if (o.kind === 'busy') {
      const text = 'the proxy is busy checking credentials; try again\n';
      return { status: 503, text, fields: 'Retry-After: 1\r\n' };
    }
    const text = 'this proxy needs a user and password (Basic)\n';
    return { status: 407, text, fields: `Proxy-Authenticate: ${this.challenge}\r\n` };
  }

  /** A refusal that counts against the source: 407, or 429 once its bucket is empty. */
  #failed(source: string, now: number): AuthOutcome {
    const wait = this.#failures.take(source, now);
    return wait === undefined ? REFUSED : { kind: 'limited', retryAfterMs: wait };
  }

  /** The cache key of a header: an HMAC with a key of this process's, never the header. */
  #digest(value: string): string {
    const c = crypto();
    this.#key ??= c.randomBytes(32);
    return c.createHmac('sha256', this.#key).update(value).digest('base64');
  }

  /** Drops what was verified against a line that has changed or gone. */
  #forgetChanged(users: ReadonlyMap<string, string> | undefined): void {
    for (const [key, kept] of this.#cache) {
      if (users?.get(kept.user) !== kept.hash) this.#cache.delete(key);
    }
  }
}
