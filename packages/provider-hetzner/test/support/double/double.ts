// Test support (not a test file): a double of the Hetzner Cloud API on 127.0.0.1 (node:http),
// held to the real `hcloud` CLI (test/hcloud.test.ts) and used by the provider's tests. It keeps
// servers, firewalls and actions; runs a server through `initializing`, `starting` and `running`
// on the real API's time scale unless a test shortens `timings`; answers with the documented
// shapes, status codes and rate-limit headers; refuses what the API refuses (an unknown server
// type, image or location, a type not offered in the location, a bad label or selector, a name
// in use, a server over the project's limit); and gives the tests their controls: held and
// malformed answers, a create that fails after it was accepted, a rate limit, a lock.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import { invalidField, notFound, Refusal, rateLimited, unauthorized } from './answers.js';
import {
  DATACENTERS,
  datacenterJson,
  type ImageRec,
  imageJson,
  images,
  type Json,
  LOCATIONS,
  locationJson,
  type ServerTypeRec,
  serverTypeJson,
  serverTypes,
} from './catalogue.js';
import { FirewallRoutes } from './firewalls.js';
import { labelsProblems, matches, parseSelector, SelectorError } from './labels.js';
import { ServerRoutes } from './servers.js';
import {
  type ActionRec,
  actionJson,
  type FirewallRec,
  paginate,
  type ServerRec,
  serverJson,
} from './store.js';

/** How long the double's server transitions take, in ms. */
export interface Timings {
  /** `initializing` until `starting` (the create action ends then). */
  readonly initializingMs: number;
  /** `starting` until `running`. */
  readonly startingMs: number;
  /** `deleting` until the server is gone. */
  readonly deleteMs: number;
}

/** The real API's time scale: a server runs about 25 s after its create, and is gone 5 s after its delete. */
export const REAL_TIMINGS: Timings = Object.freeze({
  initializingMs: 10_000,
  startingMs: 15_000,
  deleteMs: 5_000,
});

/** Options of {@link startHetznerDouble}. */
export interface HetznerDoubleOptions {
  /** Tokens the double accepts (default one, `test-token`). */
  readonly tokens?: readonly string[];
  /** Transition times (default {@link REAL_TIMINGS}); tests shorten them. */
  readonly timings?: Partial<Timings>;
  /** The project's server limit (default 25). */
  readonly serverLimit?: number;
  /** Requests per hour (`RateLimit-Limit`, default 3600). */
  readonly rateLimit?: number;
}

/** What a request asked, once read. */
export interface Req {
  readonly method: string;
  readonly parts: readonly string[];
  readonly query: URLSearchParams;
  readonly body: Json | undefined;
}

/** A route's answer. */
export interface Answer {
  readonly status: number;
  readonly body?: unknown;
}

/** The double of the Hetzner Cloud API; start it with {@link startHetznerDouble}. */
export class HetznerDouble {
  /** `http://127.0.0.1:<port>/v1`: the endpoint (`HCLOUD_ENDPOINT`). */
  url = '';
  /** Every request, `METHOD /v1/path?query`, in order. */
  readonly requests: string[] = [];
  /** Tokens the API accepts. */
  readonly tokens: Set<string>;
  /** When set, a refused token is echoed in the 401's message (a careless API, for the sentinel test). */
  echoCredential = false;
  readonly timings: Timings;
  readonly servers = new Map<number, ServerRec>();
  readonly firewalls = new Map<number, FirewallRec>();
  readonly actions = new Map<number, ActionRec>();
  /** The server types; a test may take a location away from one. */
  readonly serverTypes: ServerTypeRec[] = serverTypes();
  /** The images; a test may withdraw one (`status`). */
  readonly images: ImageRec[] = images();
  /** The locations the API knows; a test may remove one. */
  readonly locations = new Set(LOCATIONS.map((l) => l.name));
  /** The project's server limit. */
  serverLimit: number;
  /** When set, the next server create is accepted and its action then fails. */
  failNextCreateLater = false;
  readonly rateLimit: number;

  readonly #servers: ServerRoutes;
  readonly #firewallRoutes: FirewallRoutes;
  #server: Server | undefined;
  #nextId = 1000;
  #nextAddress = 10;
  #blocker: { skip: number; gate: HarnessGate } | undefined;
  readonly #malformed: string[] = [];
  #rateRefusals = 0;
  #remaining: number;
  #refilledAt = Date.now();
  readonly #timers = new Map<string, { timer: NodeJS.Timeout; run: () => void }>();

  constructor(o: HetznerDoubleOptions = {}) {
    this.tokens = new Set(o.tokens ?? ['test-token']);
    this.timings = { ...REAL_TIMINGS, ...o.timings };
    this.serverLimit = o.serverLimit ?? 25;
    this.rateLimit = o.rateLimit ?? 3600;
    this.#remaining = this.rateLimit;
    this.#servers = new ServerRoutes(this);
    this.#firewallRoutes = new FirewallRoutes(this);
  }

  // ---- ids, timers and actions, for the routes -----------------------------------------------

  /** A fresh ID for a server, firewall, action or address. */
  nextId(): number {
    return this.#nextId++;
  }

  /** A fresh public IPv4 address and IPv6 /64 (documentation ranges). */
  nextAddresses(): { ipv4: { id: number; ip: string }; ipv6: { id: number; ip: string } } {
    const n = this.#nextAddress++;
    return {
      ipv4: { id: this.nextId(), ip: `203.0.113.${n}` },
      ipv6: { id: this.nextId(), ip: `2001:db8:${n.toString(16)}::/64` },
    };
  }

  /** Starts an action on resources. */
  startAction(command: string, resources: { id: number; type: string }[]): ActionRec {
    const a: ActionRec = {
      id: this.nextId(),
      command,
      status: 'running',
      progress: 0,
      started: new Date(),
      finished: undefined,
      resources,
      error: undefined,
    };
    this.actions.set(a.id, a);
    return a;
  }

  /** Ends an action: success, or the error given. */
  endAction(a: ActionRec, error?: { code: string; message: string }): void {
    a.status = error === undefined ? 'success' : 'error';
    a.progress = 100;
    a.finished = new Date();
    a.error = error;
  }

  /** An action that is already done (a rule change, a label update). */
  doneAction(command: string, resources: { id: number; type: string }[]): ActionRec {
    const a = this.startAction(command, resources);
    this.endAction(a);
    return a;
  }

  /** Runs `run` after `ms` (or at `settle()`), keyed so that one key has one pending step. */
  later(key: string, ms: number, run: () => void): void {
    this.cancel(key);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      run();
    }, ms);
    this.#timers.set(key, { timer, run });
  }

  /** Drops the pending step of `key`. */
  cancel(key: string): void {
    const t = this.#timers.get(key);
    if (t !== undefined) clearTimeout(t.timer);
    this.#timers.delete(key);
  }

  /** The server named `name`. */
  serverNamed(name: string): ServerRec | undefined {
    return [...this.servers.values()].find((s) => s.name === name);
  }

  /** Labels the API would refuse are `invalid_input`, as the API answers them. */
  checkLabels(labels: unknown): void {
    const problems = labelsProblems(labels);
    if (problems.length > 0) throw invalidField('labels', problems, true);
  }

  /** Items whose labels match `label_selector` (all when there is none); a bad selector is `invalid_input`. */
  selected<T extends { labels: Record<string, string> }>(
    items: readonly T[],
    query: URLSearchParams,
  ): T[] {
    const text = query.get('label_selector');
    if (text === null || text === '') return [...items];
    let reqs: ReturnType<typeof parseSelector>;
    try {
      reqs = parseSelector(text);
    } catch (err) {
      if (!(err instanceof SelectorError)) throw err;
      throw new Refusal('invalid_input', err.message, {
        fields: [{ name: 'label_selector', messages: [err.message] }],
      });
    }
    return items.filter((i) => matches(reqs, i.labels));
  }

  serverJson(s: ServerRec): Json {
    return serverJson(s, this.serverTypes);
  }

  // ---- harness controls ----------------------------------------------------------------------

  /** Holds every request after `skip` more until the gate is released; held requests are then carried out. */
  blockCalls(skip: number): HarnessGate {
    const gate = createGate();
    this.#blocker = { skip, gate };
    void gate.released.then(() => {
      if (this.#blocker?.gate === gate) this.#blocker = undefined;
    });
    return gate;
  }

  /** The next deletion of server `name` stops while `deleting` until the gate is released. */
  holdNextDelete(name: string): HarnessGate {
    return this.#servers.holdNextDelete(name);
  }

  /** The next request is answered with something a client cannot read. */
  injectMalformed(kind = 'wrong-type'): void {
    this.#malformed.push(kind);
  }

  /** The next `n` requests are refused with 429 `rate_limit_exceeded`, the limit used up. */
  refuseForRate(n: number): void {
    this.#rateRefusals += n;
  }

  /** Plants a server as the API would hold it; `status` `initializing` never moves on by itself. */
  plantServer(
    name: string,
    o: {
      status?: string;
      labels?: Record<string, string>;
      ipv4?: string | null;
      datacenter?: string;
    } = {},
  ): ServerRec {
    return this.#servers.plant(name, o);
  }

  /** Removes a server at once, as if it had never been. */
  removeServer(id: number): void {
    this.#servers.remove(id);
  }

  /** Runs every pending transition now (servers reach their next states, deletions end). */
  settle(): void {
    for (let round = 0; round < 10 && this.#timers.size > 0; round++) {
      for (const [key, t] of [...this.#timers]) {
        clearTimeout(t.timer);
        this.#timers.delete(key);
        t.run();
      }
    }
  }

  /** The firewalls (the provider's secondary resources). */
  secondaryCount(): number {
    return this.firewalls.size;
  }

  // ---- the server ----------------------------------------------------------------------------

  async listen(port = 0): Promise<string> {
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(new Refusal('server_error', String(err)).body()));
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    return this.url;
  }

  /** Stops the server and every timer; held requests are let go. */
  async close(): Promise<void> {
    for (const t of this.#timers.values()) clearTimeout(t.timer);
    this.#timers.clear();
    this.#blocker?.gate.release();
    this.#servers.releaseHolds();
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #rateHeaders(): Record<string, string> {
    const now = Date.now();
    const refill = Math.floor((now - this.#refilledAt) / 1000);
    if (refill > 0) {
      this.#remaining = Math.min(this.rateLimit, this.#remaining + refill);
      this.#refilledAt += refill * 1000;
    }
    if (this.#rateRefusals > 0) this.#remaining = 0;
    else this.#remaining = Math.max(0, this.#remaining - 1);
    return {
      'ratelimit-limit': String(this.rateLimit),
      'ratelimit-remaining': String(this.#remaining),
      'ratelimit-reset': String(Math.floor(now / 1000) + (this.rateLimit - this.#remaining)),
    };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    this.requests.push(`${method} ${url.pathname}${url.search}`);
    const blocker = this.#blocker;
    if (blocker !== undefined) {
      if (blocker.skip > 0) blocker.skip--;
      else await blocker.gate.hold();
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      ...this.#rateHeaders(),
    };
    const malformed = this.#malformed.shift();
    if (malformed !== undefined) {
      const bodies: Record<string, string> = {
        'empty-object': '{}',
        'not-json': '<html><body>502 Bad Gateway</body></html>',
        null: 'null',
        'wrong-type':
          '{"server": {"id": "seven", "status": 3}, "servers": {"id": 1}, "firewall": [], "firewalls": "none", "action": 1, "locations": 7, "server_types": null, "images": {}}',
      };
      res.writeHead(200, headers);
      res.end(bodies[malformed] ?? '{}');
      return;
    }
    let answer: Answer;
    try {
      this.#authorize(req.headers.authorization);
      if (this.#rateRefusals > 0) {
        this.#rateRefusals--;
        throw rateLimited(this.rateLimit);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Json | undefined;
      if (text !== '') {
        try {
          body = JSON.parse(text) as Json;
        } catch {
          throw new Refusal('json_error', 'invalid JSON input');
        }
      }
      if (!url.pathname.startsWith('/v1/')) throw new Refusal('not_found', 'not found');
      const parts = url.pathname
        .slice(4)
        .split('/')
        .filter((p) => p !== '');
      answer = this.#route({ method, parts, query: url.searchParams, body });
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      answer = { status: err.status, body: err.body() };
    }
    if (answer.status === 204) {
      res.writeHead(204, headers);
      res.end();
      return;
    }
    res.writeHead(answer.status, headers);
    res.end(JSON.stringify(answer.body));
  }

  #authorize(header: string | undefined): void {
    const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
    if (token === undefined || !this.tokens.has(token)) {
      throw unauthorized(this.echoCredential ? token : undefined);
    }
  }

  #route(r: Req): Answer {
    const [collection, id, sub, verb] = r.parts;
    switch (collection) {
      case 'servers':
        return this.#servers.route(r);
      case 'firewalls':
        return this.#firewallRoutes.route(r);
      case 'actions':
        return this.#actions(r, id);
      case 'locations':
        return this.#catalogue(r, 'locations', 'location', this.#locationJsons(), id);
      case 'datacenters':
        return this.#catalogue(
          r,
          'datacenters',
          'datacenter',
          DATACENTERS.filter((d) => this.locations.has(d.location)).map((d) =>
            datacenterJson(d.name, this.serverTypes),
          ),
          id,
        );
      case 'server_types':
        return this.#catalogue(
          r,
          'server_types',
          'server_type',
          this.serverTypes.map(serverTypeJson),
          id,
        );
      case 'images':
        return this.#imageList(r, id);
      case 'ssh_keys':
        return this.#catalogue(r, 'ssh_keys', 'ssh_key', [], id);
      default:
        void sub;
        void verb;
        throw new Refusal('not_found', 'not found');
    }
  }

  #locationJsons(): Json[] {
    return LOCATIONS.filter((l) => this.locations.has(l.name)).map(locationJson);
  }

  /** `GET /<collection>` (with `name`, paged) and `GET /<collection>/{id}`. */
  #catalogue(r: Req, collection: string, one: string, items: Json[], id: string | undefined) {
    if (r.method !== 'GET') throw new Refusal('method_not_allowed', 'method not allowed');
    if (id !== undefined) {
      const found = items.find((i) => String(i.id) === id);
      if (found === undefined) throw notFound(one.replace('_', ' '), id);
      return { status: 200, body: { [one]: found } };
    }
    const name = r.query.get('name');
    const chosen = name === null ? items : items.filter((i) => i.name === name);
    const page = paginate(chosen, r.query);
    return {
      status: 200,
      body: { [collection]: page.items, meta: { pagination: page.pagination } },
    };
  }

  #imageList(r: Req, id: string | undefined): Answer {
    const all = this.images.filter((i) => i.status === 'available' || id !== undefined);
    const arch = r.query.getAll('architecture');
    const chosen = all.filter((i) => arch.length === 0 || arch.includes(i.architecture));
    return this.#catalogue(r, 'images', 'image', chosen.map(imageJson), id);
  }

  /** `GET /actions?id=..` and `GET /actions/{id}`. */
  #actions(r: Req, id: string | undefined): Answer {
    if (r.method !== 'GET') throw new Refusal('method_not_allowed', 'method not allowed');
    if (id !== undefined) {
      const a = this.actions.get(Number(id));
      if (a === undefined) throw notFound('action', id);
      return { status: 200, body: { action: actionJson(a) } };
    }
    const ids = r.query.getAll('id').map(Number);
    const chosen = [...this.actions.values()].filter((a) => ids.length === 0 || ids.includes(a.id));
    const page = paginate(chosen.map(actionJson), r.query);
    return { status: 200, body: { actions: page.items, meta: { pagination: page.pagination } } };
  }

  /** A fresh random root password, as the API gives one when no SSH key is named. */
  rootPassword(): string {
    return randomBytes(15).toString('base64url');
  }
}

/** Starts a double on 127.0.0.1 (a free port unless given). */
export async function startHetznerDouble(
  o: HetznerDoubleOptions & { port?: number } = {},
): Promise<HetznerDouble> {
  const d = new HetznerDouble(o);
  await d.listen(o.port ?? 0);
  return d;
}
