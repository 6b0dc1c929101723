/**
 * Parent proxies: when a proxy is given them, it forwards every request and
 * tunnel through one of them instead of connecting to origins itself (a
 * gateway in front of a pool of proxies). This module keeps the set: which
 * parent a request goes to (the one with the fewest requests in flight, or
 * the one its session is held to), which are taken out after failing in a
 * row, and what each has carried (requests, tunnels, bytes, failures,
 * latency), for the metrics.
 *
 * A parent's credential becomes the `Proxy-Authorization` value sent to it
 * and is kept nowhere else: not in the stats, the access log or an error.
 *
 * @module
 */
import { type BanOptions, Bans } from './bans.js';
import { now as clock } from './clock.js';
import {
  type ConnectionPin,
  filterText,
  matches,
  type ParentFilter,
  SessionTable,
  type Steer,
} from './steering.js';

/** A parent proxy as the proxy is given it. */
export interface ParentProxy {
  /** What names it to clients (the `X-Proxy-Op-Upstream` field) and in the metrics. */
  readonly name: string;
  /** `http://[user:password@]host:port`, the user and password percent-encoded as in any URL. */
  readonly url: string;
  /**
   * When it was last verified (any string that changes with each
   * verification, such as the time of the last passed probe): a parent
   * taken out for failing comes back once this changes.
   */
  readonly verified?: string | undefined;
  /** Where it is, for the user name's `country` and `region` filters. */
  readonly location?:
    | { readonly country?: string | undefined; readonly region?: string | undefined }
    | undefined;
  /** The provider it runs on, for the user name's `provider` filter. */
  readonly provider?: string | undefined;
}

/** How requests are kept together on one parent. */
export type SessionPolicy = 'none' | 'client' | 'header';

/** How the proxy uses its parents. */
export interface ParentOptions {
  /** The parents; {@link ForwardProxy.setParents} replaces them while the proxy runs. */
  readonly upstreams: readonly ParentProxy[];
  /**
   * `none` (the default): each request and tunnel to the parent with the
   * fewest in flight; `client`: each client address stays on one parent;
   * `header`: requests with the same value of `sessionHeader` stay on
   * one parent (the field is not forwarded). A session moves only when its
   * parent leaves the set or is taken out for failing.
   */
  readonly session?: SessionPolicy | undefined;
  /** The field `session: header` keys on (default `x-proxy-op-session`). */
  readonly sessionHeader?: string | undefined;
  /** Failures in a row that take a parent out (default 3). */
  readonly ejectAfterFailures?: number | undefined;
  /** How long a parent taken out stays out unless it is verified again first, in ms (default 30000). */
  readonly ejectMs?: number | undefined;
  /** How long tunnels and requests through a parent that left the set may go on, in ms (default 30000). */
  readonly drainMs?: number | undefined;
  /**
   * While the set is empty (a pool scaled to zero), hold each new request,
   * tunnel and SOCKS5 connection until a parent comes, for at most
   * `timeoutMs` (then `503` with `Retry-After`, SOCKS5 a general failure),
   * and at most `maxWaiting` at once (more get the same at once). Without
   * it, an empty set answers `502` at once.
   */
  readonly wake?: { readonly timeoutMs: number; readonly maxWaiting: number } | undefined;
  /**
   * Bans: rules that tell a target's refusal of a parent's address, and the
   * quarantine that keeps a banned parent from that host for a while
   * (reports through the ban endpoint feed it too).
   */
  readonly bans?: BanOptions | undefined;
}

/** What one parent has carried, as {@link ForwardProxy.parentStats} reports it. */
export interface ParentStats {
  /** The parent's name. */
  readonly name: string;
  /** `host:port`, never the credential. */
  readonly address: string;
  /** In the set and not taken out. */
  readonly available: boolean;
  /** Requests and tunnels in flight now. */
  readonly inFlight: number;
  /** HTTP requests sent to it. */
  readonly requests: number;
  /** CONNECT tunnels opened through it (or tried). */
  readonly tunnels: number;
  /** Connections refused or cut before an answer, and refused credentials. */
  readonly failures: number;
  /** Bytes of request bodies and tunnels sent to it. */
  readonly bytesOut: number;
  /** Bytes of answer bodies and tunnels received from it. */
  readonly bytesIn: number;
  /**
   * Time to the answer's head (requests) or the tunnel's opening: counts per
   * bucket (upper bounds in ms), the last one for longer than every bound.
   */
  readonly latency: { readonly buckets: readonly number[]; readonly counts: readonly number[] };
  /** The sum of every latency counted, in ms. */
  readonly latencySumMs: number;
}

/** The latency buckets of {@link ParentStats}, in ms. */
export const LATENCY_BUCKETS_MS: readonly number[] = [
  1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500,
];

/** What a parent's name may hold: it is sent in a header field. */
const NAME = /^[A-Za-z0-9._~:-]{1,253}$/;

/** One parent, as the requests through it share it. */
export class Parent {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly country: string | undefined;
  readonly region: string | undefined;
  readonly provider: string | undefined;
  /** `Basic …` for its credential, or undefined without one. */
  authorization: string | undefined;
  verified: string | undefined;
  inFlight = 0;
  requests = 0;
  tunnels = 0;
  failures = 0;
  bytesOut = 0;
  bytesIn = 0;
  latencySumMs = 0;
  /** One count per bucket of {@link LATENCY_BUCKETS_MS}, then one for longer. */
  readonly latencyCounts: number[] = [...LATENCY_BUCKETS_MS.map(() => 0), 0];
  /** Failures since the last success. */
  inARow = 0;
  /** Out until then (`clock()`), and the verification it was taken out at. */
  outUntil = 0;
  outAt: string | undefined;
  /** False once it has left the set. */
  member = true;
  /** What cuts each tunnel and request through it, for a drain that ends. */
  readonly live = new Set<() => void>();

  constructor(p: ParentProxy) {
    if (typeof p.name !== 'string' || !NAME.test(p.name)) {
      throw new TypeError(
        `a parent's name is ${JSON.stringify(p.name)}; give 1 to 253 letters, digits or . _ ~ : -`,
      );
    }
    const u = parseParentUrl(p);
    this.name = p.name;
    this.host = u.host;
    this.port = u.port;
    this.authorization = u.authorization;
    this.verified = p.verified;
    this.country = p.location?.country?.toUpperCase();
    this.region = p.location?.region?.toLowerCase();
    this.provider = p.provider?.toLowerCase();
  }

  /** The key a parent is known by across updates: its name, address and placement. */
  get key(): string {
    return `${this.name}\0${this.host}:${this.port}\0${this.country}\0${this.region}\0${this.provider}`;
  }

  /** The field line sent to it, or ''. */
  get authField(): string {
    return this.authorization === undefined ? '' : `Proxy-Authorization: ${this.authorization}\r\n`;
  }

  available(now: number): boolean {
    return this.member && this.outUntil <= now;
  }

  /** It answered: the failures in a row start again. */
  succeeded(latencyMs: number): void {
    this.inARow = 0;
    this.latencySumMs += latencyMs;
    const i = LATENCY_BUCKETS_MS.findIndex((b) => latencyMs <= b);
    const at = i < 0 ? LATENCY_BUCKETS_MS.length : i;
    this.latencyCounts[at] = (this.latencyCounts[at] ?? 0) + 1;
  }
}

/** The parents of one proxy. */
export class ParentSet {
  readonly session: SessionPolicy;
  /** Lowercased. */
  readonly sessionHeader: string;
  readonly #ejectAfter: number;
  readonly #ejectMs: number;
  readonly #drainMs: number;
  #parents: Parent[] = [];
  /** The parents of the set by {@link Parent.key}, to find one again on an update. */
  readonly #known = new Map<string, Parent>();
  readonly #sessions = new SessionTable<Parent>();
  #turn = 0;
  /** How work is held while the set is empty, when it is. */
  readonly wake: { readonly timeoutMs: number; readonly maxWaiting: number } | undefined;
  /** What wakes each held request when a parent comes. */
  readonly #waiters = new Set<() => void>();
  /** The ban rules and the quarantine. */
  readonly bans: Bans;

  constructor(o: ParentOptions) {
    this.session = o.session ?? 'none';
    if (!['none', 'client', 'header'].includes(this.session)) {
      throw new TypeError(`parents.session is "${String(o.session)}"; use none, client or header`);
    }
    this.sessionHeader = (o.sessionHeader ?? 'x-proxy-op-session').toLowerCase();
    this.#ejectAfter = positive(o.ejectAfterFailures, 3, 'parents.ejectAfterFailures');
    this.#ejectMs = positive(o.ejectMs, 30_000, 'parents.ejectMs');
    this.#drainMs = positive(o.drainMs, 30_000, 'parents.drainMs');
    this.wake =
      o.wake === undefined
        ? undefined
        : {
            timeoutMs: positive(o.wake.timeoutMs, 120_000, 'parents.wake.timeoutMs'),
            maxWaiting: positive(o.wake.maxWaiting, 1_000, 'parents.wake.maxWaiting'),
          };
    this.bans = new Bans(o.bans ?? {});
    this.set(o.upstreams);
  }

  /**
   * Replaces the set. A parent that stays (same name and address) keeps its
   * counters and takes a new credential for the next requests, and comes
   * back at once when it was out and its `verified` changed; one that leaves takes nothing new, and what still runs through
   * it is cut after `drainMs`.
   */
  set(list: readonly ParentProxy[]): void {
    const next: Parent[] = [];
    const seen = new Set<string>();
    for (const p of list) {
      const fresh = new Parent(p);
      if (seen.has(fresh.key)) continue;
      seen.add(fresh.key);
      const old = this.#known.get(fresh.key);
      if (old !== undefined) {
        // A new credential (a rotation) is sent from the next request on; what runs goes on.
        old.authorization = fresh.authorization;
        if (old.outUntil > 0 && p.verified !== undefined && p.verified !== old.outAt) {
          old.outUntil = 0;
          old.inARow = 0;
        }
        old.verified = p.verified;
        next.push(old);
      } else {
        this.#known.set(fresh.key, fresh);
        next.push(fresh);
      }
    }
    for (const p of this.#parents) if (!seen.has(p.key)) this.#leave(p);
    this.#parents = next;
    if (next.length > 0) for (const wake of [...this.#waiters]) wake();
  }

  /** Requests, tunnels and SOCKS5 connections held for a parent now. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Whether work that found no parent is to wait for one: the set is empty
   * and `wake` is on.
   */
  get holds(): boolean {
    return this.wake !== undefined && this.#parents.length === 0;
  }

  /**
   * Waits for a parent to come: true once the set has one, false after
   * `wake.timeoutMs`, or at once when `wake.maxWaiting` are held already.
   */
  waitForParent(): Promise<boolean> {
    const w = this.wake;
    if (w === undefined || this.#waiters.size >= w.maxWaiting) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (came: boolean) => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve(came);
      };
      const wake = () => done(true);
      const timer = setTimeout(() => done(false), w.timeoutMs);
      this.#waiters.add(wake);
    });
  }

  #leave(p: Parent): void {
    p.member = false;
    this.#known.delete(p.key);
    if (p.live.size === 0) return;
    setTimeout(() => {
      for (const cut of [...p.live]) cut();
    }, this.#drainMs).unref();
  }

  /**
   * The session a request belongs to by the set's policy (a header's value
   * or the client's address, keyed apart from user-name sessions), or
   * undefined.
   */
  sessionOf(
    client: string,
    names: readonly string[],
    values: readonly string[],
  ): string | undefined {
    if (this.session === 'client') return `c\0${client}`;
    if (this.session === 'header') {
      const i = names.indexOf(this.sessionHeader);
      return i < 0 ? undefined : `h\0${values[i]}`;
    }
    return undefined;
  }

  /**
   * The parent for a request as `steer` asks, other than those in `tried`
   * and only among those its filter allows: the session's parent while it
   * is held and available; else, with `rotate: connection`, the connection's
   * parent while it is available; else the available one with the fewest in
   * flight (ties in turn), and with `rotate: request` never the one the
   * connection used last while another is there. The choice is held for the
   * session and the connection. Undefined when none is available.
   */
  pick(steer: Steer<Parent>, tried: ReadonlySet<Parent>): Parent | undefined {
    const now = clock();
    const { session, filter, pin, host } = steer;
    const kept = (p: Parent) => this.bans.held(p.name, host, now);
    const takes = (p: Parent) =>
      p.available(now) && !tried.has(p) && matches(p, filter) && !kept(p);
    let best: Parent | undefined;
    // A session whose parent is kept from this host goes elsewhere for it, and stays held.
    let stays = false;
    if (session !== undefined) {
      const held = this.#sessions.get(session, now);
      if (held !== undefined && takes(held)) best = held;
      else if (held !== undefined && kept(held)) stays = true;
      else if (held !== undefined && tried.size === 0) steer.movedFrom = held.name;
    }
    if (best === undefined && steer.rotate === 'connection' && session === undefined) {
      const pinned = pin?.parent;
      if (pinned !== undefined && takes(pinned)) best = pinned;
    }
    if (best === undefined)
      best = this.#fewest(takes, steer.rotate === 'request' ? pin : undefined);
    if (best === undefined) return undefined;
    if (session !== undefined && tried.size === 0 && !stays) {
      this.#sessions.hold(session, best, steer.ttlMs, now);
    }
    if (pin !== undefined) pin.parent = best;
    return best;
  }

  /**
   * The one `takes` allows with the fewest in flight, ties in turn; not the
   * one `avoid` holds while another is allowed.
   */
  #fewest(
    takes: (p: Parent) => boolean,
    avoid: ConnectionPin<Parent> | undefined,
  ): Parent | undefined {
    const n = this.#parents.length;
    const last = avoid?.parent;
    let best: Parent | undefined;
    let fallback: Parent | undefined;
    for (let i = 0; i < n; i++) {
      const p = this.#parents[(this.#turn + i) % n] as Parent;
      if (!takes(p)) continue;
      if (p === last) {
        fallback = p;
        continue;
      }
      if (best === undefined || p.inFlight < best.inFlight) best = p;
    }
    this.#turn = n === 0 ? 0 : (this.#turn + 1) % n;
    return best ?? fallback;
  }

  /**
   * Why no parent of the set can ever take a request with `filter`, naming
   * the filter, or undefined when some parent matches it (and is only busy
   * or out for now).
   */
  unmatched(filter: ParentFilter | undefined): string | undefined {
    if (filter === undefined || this.#parents.some((p) => matches(p, filter))) return undefined;
    return `no upstream matches ${filterText(filter)}`;
  }

  /**
   * Whether a parent other than those in `tried` (where `filter` asks, and
   * not kept from `host`) is available now.
   */
  hasOther(tried: ReadonlySet<Parent>, filter?: ParentFilter, host?: string): boolean {
    const now = clock();
    return this.#parents.some(
      (p) =>
        p.available(now) &&
        !tried.has(p) &&
        matches(p, filter) &&
        !this.bans.held(p.name, host, now),
    );
  }

  /** A request or tunnel through `p` failed before its answer: out after enough in a row. */
  failed(p: Parent): void {
    p.failures++;
    p.inARow++;
    if (p.inARow >= this.#ejectAfter && p.outUntil <= clock()) {
      p.outUntil = clock() + this.#ejectMs;
      p.outAt = p.verified;
    }
  }

  /** What each parent of the set has carried (one that left is no longer reported). */
  stats(): ParentStats[] {
    const now = clock();
    return this.#parents.map((p) => ({
      name: p.name,
      address: `${p.host}:${p.port}`,
      available: p.available(now),
      inFlight: p.inFlight,
      requests: p.requests,
      tunnels: p.tunnels,
      failures: p.failures,
      bytesOut: p.bytesOut,
      bytesIn: p.bytesIn,
      latency: { buckets: LATENCY_BUCKETS_MS, counts: [...p.latencyCounts] },
      latencySumMs: p.latencySumMs,
    }));
  }
}

function positive(v: number | undefined, dflt: number, field: string): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v <= 0) {
    throw new TypeError(`${field} is ${String(v)}; give a number above 0`);
  }
  return v;
}

/** The address and the Basic credential of a parent's URL; the error never shows the URL. */
function parseParentUrl(p: ParentProxy): {
  host: string;
  port: number;
  authorization: string | undefined;
} {
  let u: URL;
  try {
    u = new URL(p.url);
  } catch {
    throw new TypeError(`the url of parent ${p.name} is not a URL; give http://host:port`);
  }
  if (u.protocol !== 'http:') {
    throw new TypeError(`the url of parent ${p.name} is not http://; give http://host:port`);
  }
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const port = u.port === '' ? 80 : Number(u.port);
  const user = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  const authorization =
    user === '' && password === ''
      ? undefined
      : `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
  return { host, port, authorization };
}
