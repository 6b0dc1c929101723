// The page's live state: the event stream's snapshot and patches applied to maps of rows, kept
// no larger than the operator's own state (a row replaced on each change, removed with its
// Proxy), and the connection, which reconnects by itself (EventSource retries a dropped
// stream; one it gave up on is opened again here, with backoff).
import type {
  CollectionName,
  PagePatch,
  PageRole,
  PageState,
  PoolView,
  ProviderView,
  ProxyRow,
} from '../../src/page/wire.js';

/** Where the stream stands. */
export type Connection = 'connecting' | 'live' | 'reconnecting';

/** The state the page renders. */
export interface LiveState {
  readonly role: PageRole | undefined;
  readonly problems: readonly string[];
  readonly providers: ReadonlyMap<string, ProviderView>;
  readonly proxies: ReadonlyMap<string, ProxyRow>;
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly connection: Connection;
  /** Bumped with every message. */
  readonly version: number;
  /** The Proxies the last message changed or removed (every one after a snapshot). */
  readonly changed: ReadonlySet<string>;
}

const nameOf = {
  providers: (v: ProviderView) => v.name,
  proxies: (v: ProxyRow) => v.key,
  pools: (v: PoolView) => v.key,
} as const;

/** The connection and the state; `subscribe` is told of every change. */
export class Live {
  #role: PageRole | undefined;
  #problems: readonly string[] = [];
  #providers = new Map<string, ProviderView>();
  #proxies = new Map<string, ProxyRow>();
  #pools = new Map<string, PoolView>();
  #connection: Connection = 'connecting';
  #version = 0;
  #changed: ReadonlySet<string> = new Set();
  #source: EventSource | undefined;
  #retryMs = 1000;
  #retry: ReturnType<typeof setTimeout> | undefined;
  readonly #listeners = new Set<() => void>();
  readonly #url: string;

  constructor(url = 'events') {
    this.#url = url;
  }

  /** The state now. */
  get state(): LiveState {
    return {
      role: this.#role,
      problems: this.#problems,
      providers: this.#providers,
      proxies: this.#proxies,
      pools: this.#pools,
      connection: this.#connection,
      version: this.#version,
      changed: this.#changed,
    };
  }

  /** Calls `fn` after every change; returns the unsubscribe function. */
  subscribe(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Opens the stream. */
  connect(): void {
    clearTimeout(this.#retry);
    this.#source?.close();
    const es = new EventSource(this.#url);
    this.#source = es;
    es.addEventListener('open', () => {
      this.#retryMs = 1000;
      this.#set('live');
    });
    es.addEventListener('error', () => {
      this.#set('reconnecting');
      // CLOSED: the browser gave up (an answer that was no stream); open it again ourselves.
      if (es.readyState === EventSource.CLOSED) {
        this.#retry = setTimeout(() => this.connect(), this.#retryMs);
        this.#retryMs = Math.min(this.#retryMs * 2, 15_000);
      }
    });
    es.addEventListener('snapshot', (e) => this.#snapshot(JSON.parse(e.data) as PageState));
    es.addEventListener('patch', (e) => this.#patch(JSON.parse(e.data) as PagePatch));
  }

  #set(c: Connection): void {
    if (this.#connection === c) return;
    this.#connection = c;
    this.#emit();
  }

  #snapshot(s: PageState): void {
    this.#role = s.role;
    this.#problems = s.problems;
    this.#providers = new Map(s.providers.map((v) => [v.name, v]));
    this.#proxies = new Map(s.proxies.map((v) => [v.key, v]));
    this.#pools = new Map((s.pools ?? []).map((v) => [v.key, v]));
    this.#connection = 'live';
    this.#changed = new Set(this.#proxies.keys());
    this.#emit();
  }

  #patch(p: PagePatch): void {
    if (p.role !== undefined) this.#role = p.role;
    if (p.problems !== undefined) this.#problems = p.problems;
    const changed = new Set<string>();
    // Each collection anew, so a render compares maps by identity.
    const next = {
      providers: new Map(this.#providers),
      proxies: new Map(this.#proxies),
      pools: new Map(this.#pools),
    };
    type Row = ProviderView | ProxyRow | PoolView;
    for (const c of Object.keys(next) as CollectionName[]) {
      const map = next[c] as Map<string, Row>;
      const name = nameOf[c] as (v: Row) => string;
      for (const v of p.upsert?.[c] ?? []) {
        map.set(name(v), v);
        if (c === 'proxies') changed.add(name(v));
      }
      for (const k of p.remove?.[c] ?? []) {
        map.delete(k);
        if (c === 'proxies') changed.add(k);
      }
    }
    this.#providers = next.providers;
    this.#proxies = next.proxies;
    this.#pools = next.pools;
    this.#changed = changed;
    this.#emit();
  }

  #emit(): void {
    this.#version++;
    for (const l of this.#listeners) l();
  }
}
