/**
 * Parameters in the proxy user name, the way clients of proxy networks
 * choose a session, a rotation and where their requests leave from without
 * setting a header (which a TLS tunnel hides and most client libraries
 * cannot set per request):
 *
 * ```
 * USER[-session-ID][-ttl-DURATION][-rotate-request|-rotate-connection]
 *     [-country-CC][-region-REGION][-provider-NAME]
 * ```
 *
 * `USER` is a user of the password file, so it may hold `-` itself: the
 * longest prefix (up to a `-`) that names a user is the user, and the rest
 * is read as `-key-value` pairs. `region` and `provider` values may hold
 * `-` (`eu-central-1`): they run to the next known key. Every other value
 * is one word. Reading is strict: an unknown key, a key given twice, a bad
 * value or a combination that means nothing is a problem naming the
 * parameter, never the password.
 *
 * @module
 */

/** What a user name asks for, beyond the user. */
export interface UserParams {
  /** The session id: requests of one session keep one upstream (and one egress address). */
  readonly session?: string;
  /** How long a session is kept after its last request, in ms. */
  readonly ttlMs?: number;
  /**
   * `request`: each request goes to the next upstream; `connection`: one
   * upstream per client connection (the default without a session).
   */
  readonly rotate?: 'request' | 'connection';
  /** Upstreams in this country (ISO 3166-1 alpha-2, upper case). */
  readonly country?: string;
  /** Upstreams in this region (lower case). */
  readonly region?: string;
  /** Upstreams from this provider (lower case). */
  readonly provider?: string;
}

/** The parameters while they are read. */
type Building = { -readonly [K in keyof UserParams]: UserParams[K] };

/** No parameters. */
export const NO_PARAMS: UserParams = Object.freeze({});

/** A session's TTL when the user name gives none, in ms (10 minutes). */
export const DEFAULT_SESSION_TTL_MS = 10 * 60_000;
/** The longest TTL a user name may ask for, in ms (24 hours). */
export const MAX_SESSION_TTL_MS = 24 * 3_600_000;
/** The shortest TTL, in ms (1 second). */
export const MIN_SESSION_TTL_MS = 1_000;

const KEYS = ['session', 'ttl', 'rotate', 'country', 'region', 'provider'] as const;
type Key = (typeof KEYS)[number];
const KEY_SET: ReadonlySet<string> = new Set(KEYS);
/** Keys whose value may hold `-`. */
const DASHED: ReadonlySet<string> = new Set(['region', 'provider']);

const SESSION = /^[A-Za-z0-9_]{1,64}$/;
const TTL = /^([0-9]{1,6})(s|m|h)$/;
const COUNTRY = /^[A-Za-z]{2}$/;
const NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000 } as const;

/**
 * Splits a user name into the user and the parameter text after it: the
 * whole name when it is a user (no parameter text), else the longest
 * prefix ending before a `-` that is one; the whole name (and no parameter
 * text) when none is.
 */
export function splitUserName(
  name: string,
  isUser: (user: string) => boolean,
): { user: string; rest: string | undefined } {
  if (isUser(name)) return { user: name, rest: undefined };
  for (let at = name.lastIndexOf('-'); at > 0; at = name.lastIndexOf('-', at - 1)) {
    const user = name.slice(0, at);
    if (isUser(user)) return { user, rest: name.slice(at + 1) };
  }
  return { user: name, rest: undefined };
}

/** A parameter as the problem names it: the key, and the value when it is short and plain. */
function shown(key: string, value: string): string {
  const v = /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? `-${value}` : '';
  return `"${key}${v}"`;
}

/**
 * Reads the parameter text after the user (`session-abc-country-de`).
 * Answers the parameters, or the problem as one line naming the parameter
 * and the fix.
 */
export function parseUserParams(rest: string | undefined): UserParams | { problem: string } {
  if (rest === undefined) return NO_PARAMS;
  if (rest === '')
    return { problem: 'the user name ends in "-"; give key-value after it or leave it out' };
  const words = rest.split('-');
  const out: Building = {};
  const seen = new Set<string>();
  let i = 0;
  while (i < words.length) {
    const key = words[i] as string;
    if (!KEY_SET.has(key)) {
      return {
        problem: `the user name's parameter ${shown(key, '')} is unknown; use ${KEYS.join(', ')}`,
      };
    }
    if (seen.has(key)) return { problem: `the user name gives "${key}" twice; give it once` };
    seen.add(key);
    let end = i + 2;
    if (DASHED.has(key)) while (end < words.length && !KEY_SET.has(words[end] as string)) end++;
    const value = words.slice(i + 1, end).join('-');
    if (i + 1 >= words.length || value === '') {
      return { problem: `the user name's parameter "${key}" has no value; give ${key}-VALUE` };
    }
    const problem = take(out, key as Key, value);
    if (problem !== undefined) return { problem };
    i = end;
  }
  if (out.ttlMs !== undefined && out.session === undefined) {
    return { problem: 'the user name\'s parameter "ttl" applies to a session; add session-ID' };
  }
  if (out.rotate !== undefined && out.session !== undefined) {
    return {
      problem:
        'the user name gives both "session" and "rotate"; a session keeps one upstream, so give one of them',
    };
  }
  return out;
}

/** Sets one parameter; answers the problem with its value. */
function take(out: Building, key: Key, value: string): string | undefined {
  const bad = (fix: string) =>
    `the user name's parameter ${shown(key, value)} is not valid; ${fix}`;
  switch (key) {
    case 'session':
      if (!SESSION.test(value)) return bad('a session id is 1 to 64 letters, digits or _');
      out.session = value;
      return undefined;
    case 'ttl': {
      const m = TTL.exec(value);
      const ms = m === null ? Number.NaN : Number(m[1]) * UNIT_MS[m[2] as 's' | 'm' | 'h'];
      if (!(ms >= MIN_SESSION_TTL_MS && ms <= MAX_SESSION_TTL_MS)) {
        return bad('give a duration from 1s to 24h, such as 30s, 10m or 2h');
      }
      out.ttlMs = ms;
      return undefined;
    }
    case 'rotate':
      if (value !== 'request' && value !== 'connection') return bad('use request or connection');
      out.rotate = value;
      return undefined;
    case 'country':
      if (!COUNTRY.test(value)) return bad('give a two-letter country code such as de');
      out.country = value.toUpperCase();
      return undefined;
    case 'region':
    case 'provider': {
      const v = value.toLowerCase();
      if (!NAME.test(v)) return bad('give 1 to 63 letters, digits, _ . or -');
      out[key] = v;
      return undefined;
    }
  }
}

/** The user name for `user` with `params`: what `proxy-op url` builds. */
export function formatUserName(user: string, params: UserParams): string {
  const parts = [user];
  if (params.session !== undefined) parts.push('session', params.session);
  if (params.ttlMs !== undefined) parts.push('ttl', formatTtl(params.ttlMs));
  if (params.rotate !== undefined) parts.push('rotate', params.rotate);
  if (params.country !== undefined) parts.push('country', params.country.toLowerCase());
  if (params.region !== undefined) parts.push('region', params.region);
  if (params.provider !== undefined) parts.push('provider', params.provider);
  return parts.join('-');
}

function formatTtl(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}
