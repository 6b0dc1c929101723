/**
 * What a request asks of a gateway's parents, and the sessions that hold
 * requests to one parent: which session it belongs to (from its user name,
 * a header or its client address), how long the session is kept, whether
 * each request rotates or the client connection keeps its parent, and the
 * country, region and provider the parent must be in.
 *
 * Sessions are kept `ttlMs` after their last request (10 minutes unless the
 * user name says otherwise) and at most {@link MAX_SESSIONS} at once: past
 * that, the session used longest ago is forgotten, and its next request is
 * placed as a new session's would be.
 *
 * @module
 */
import { DEFAULT_SESSION_TTL_MS, NO_PARAMS, type UserParams } from './user-params.js';

/** The answer to work that waited for a parent that did not come (`503`). */
export const NONE_CAME = 'no upstream proxy came in time (the pool is waking from zero); try again';
/** When to try again after {@link NONE_CAME} (a header line). */
export const RETRY_AFTER = 'Retry-After: 5\r\n';

/** Sessions kept at most; the one used longest ago is forgotten first. */
export const MAX_SESSIONS = 65_536;

/** Where a parent is and whose it is, as the filters read it. */
export interface Placed {
  readonly country: string | undefined;
  readonly region: string | undefined;
  readonly provider: string | undefined;
}

/** The parents a request may go to. */
export interface ParentFilter {
  readonly country?: string | undefined;
  readonly region?: string | undefined;
  readonly provider?: string | undefined;
}

/** What one client connection keeps between its requests: the parent it last used. */
export interface ConnectionPin<P> {
  parent: P | undefined;
}

/** What a request or tunnel asks of the parents. */
export interface Steer<P> {
  /** The session's key (kinds kept apart), or undefined for none. */
  readonly session: string | undefined;
  /** How long the session is kept after its last request, in ms. */
  readonly ttlMs: number;
  /** `request`: the next parent each time; `connection`: the connection's parent while it serves. */
  readonly rotate: 'request' | 'connection';
  /** Which parents may take it; undefined: any. */
  readonly filter: ParentFilter | undefined;
  /** The client connection's pin, for `rotate`; undefined for a tunnel (one parent anyway). */
  readonly pin: ConnectionPin<P> | undefined;
  /** Set by the pick when the session was held to a parent that can no longer take it: its name. */
  movedFrom?: string | undefined;
  /** The target host, when a quarantine may keep a parent from it. */
  host?: string | undefined;
}

/**
 * The steer of a request from its user name's parameters, or else the
 * session the set's policy gives it (`fallback`: a header's value or the
 * client's address, already keyed by kind).
 */
export function steerOf<P>(
  user: string | undefined,
  params: UserParams = NO_PARAMS,
  fallback: string | undefined,
  pin: ConnectionPin<P> | undefined,
): Steer<P> {
  const session = params.session === undefined ? fallback : `u\0${user ?? ''}\0${params.session}`;
  return {
    session,
    ttlMs: params.ttlMs ?? DEFAULT_SESSION_TTL_MS,
    rotate: params.rotate ?? 'connection',
    filter: filterOf(params),
    pin,
  };
}

/** The filter a user name's parameters give, or undefined when they give none. */
export function filterOf(params: UserParams | undefined): ParentFilter | undefined {
  if (params === undefined) return undefined;
  const filtered =
    params.country !== undefined || params.region !== undefined || params.provider !== undefined;
  return filtered ? params : undefined;
}

/** The refusal of a filter by a proxy that has no parents to choose among. */
export function noParentsFor(f: ParentFilter): string {
  return `this proxy has no upstreams to choose by ${filterText(f)}; leave out country, region and provider`;
}

/** Whether `p` is where `f` asks. */
export function matches(p: Placed, f: ParentFilter | undefined): boolean {
  if (f === undefined) return true;
  return (
    (f.country === undefined || p.country === f.country) &&
    (f.region === undefined || p.region === f.region) &&
    (f.provider === undefined || p.provider === f.provider)
  );
}

/** The filter as an answer names it: `country=DE region=fsn1`. */
export function filterText(f: ParentFilter): string {
  const parts: string[] = [];
  if (f.country !== undefined) parts.push(`country=${f.country}`);
  if (f.region !== undefined) parts.push(`region=${f.region}`);
  if (f.provider !== undefined) parts.push(`provider=${f.provider}`);
  return parts.join(' ');
}

interface Held<P> {
  parent: P;
  /** Forgotten after this (`clock()`), unless used again first. */
  until: number;
}

/** The sessions of one parent set: session key to parent, kept in order of last use. */
export class SessionTable<P> {
  readonly #held = new Map<string, Held<P>>();

  /** The parent `key` is held to now, or undefined (never held, or its time is up). */
  get(key: string, now: number): P | undefined {
    const h = this.#held.get(key);
    if (h === undefined) return undefined;
    if (h.until <= now) {
      this.#held.delete(key);
      return undefined;
    }
    return h.parent;
  }

  /** Holds `key` to `parent` for `ttlMs` from `now`, as its most recent use. */
  hold(key: string, parent: P, ttlMs: number, now: number): void {
    this.#held.delete(key);
    this.#held.set(key, { parent, until: now + ttlMs });
    if (this.#held.size > MAX_SESSIONS) {
      const oldest = this.#held.keys().next().value as string;
      this.#held.delete(oldest);
    }
  }

  /** How many sessions are held (expired ones included until they are next asked for). */
  get size(): number {
    return this.#held.size;
  }
}
