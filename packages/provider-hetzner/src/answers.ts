/**
 * What the provider reads of the Hetzner Cloud API's answers: a few fields
 * of servers, firewalls, actions, locations, server types and images,
 * read strictly. A field of the wrong type is a `TypeError`, which the
 * operation shell reports as a malformed answer, never as "not found" or
 * "empty".
 *
 * @module
 */

type Json = Record<string, unknown>;

/** A server, as the provider reads it. */
export interface ServerView {
  readonly id: number;
  readonly name: string;
  /** `initializing`, `starting`, `running`, `stopping`, `off`, `deleting`, `migrating`, `rebuilding`, `unknown`. */
  readonly status: string;
  /** When the server was made (RFC 3339). */
  readonly created: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Locked by Hetzner Cloud: not available to the project. */
  readonly locked: boolean;
  /** The primary public IPv4 address, when it has one. */
  readonly ipv4: string | undefined;
  /** The primary public IPv6 network (`2a01:4f8:…::/64`), when it has one. */
  readonly ipv6: string | undefined;
  /** The datacenter's name (`fsn1-dc14`). */
  readonly datacenter: string;
  /** The location's name (`fsn1`). */
  readonly location: string;
  /** The location's country (ISO 3166-1 alpha-2, `DE`), as the API writes it. */
  readonly country: string;
  /** The server type's name. */
  readonly serverType: string;
}

/** A firewall rule, as the provider writes and reads it. */
export interface FirewallRule {
  readonly direction: 'in' | 'out';
  readonly protocol: string;
  readonly port: string | undefined;
  readonly sourceIps: readonly string[];
  readonly description: string | undefined;
}

/** A firewall, as the provider reads it. */
export interface FirewallView {
  readonly id: number;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly rules: readonly FirewallRule[];
  /** The servers it is applied to, by ID. */
  readonly servers: readonly number[];
}

/** An action: an asynchronous task of the API. */
export interface ActionView {
  readonly id: number;
  readonly command: string;
  /** `running`, `success` or `error`. */
  readonly status: string;
  readonly error: { readonly code: string; readonly message: string } | undefined;
}

/** A location. */
export interface LocationView {
  readonly name: string;
  readonly country: string;
  readonly networkZone: string;
}

/** A server type. */
export interface ServerTypeView {
  readonly name: string;
  /** `x86` or `arm`. */
  readonly architecture: string;
  /** The locations it is offered in, by name. */
  readonly locations: readonly string[];
}

/** An image. */
export interface ImageView {
  readonly id: number;
  readonly name: string;
  /** `x86` or `arm`. */
  readonly architecture: string;
  readonly status: string;
}

/** One page of a listing and the number of the next page, if there is one. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextPage: number | undefined;
}

/** What a server create answers: the server and its `create_server` action. */
export interface CreatedServer {
  readonly server: ServerView;
  readonly action: ActionView;
}

function obj(v: unknown, what: string): Json {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new TypeError(`${what} is not an object`);
  }
  return v as Json;
}

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new TypeError(`${what} is not a string`);
  return v;
}

function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`${what} is not a number`);
  return v;
}

function list(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new TypeError(`${what} is not a list`);
  return v;
}

function optStr(v: unknown, what: string): string | undefined {
  return v === undefined || v === null ? undefined : str(v, what);
}

function labelsOf(v: unknown, what: string): Record<string, string> {
  const o = obj(v, what);
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(o)) out[k] = str(value, `${what}.${k}`);
  return out;
}

/** Reads a server object. */
export function readServer(v: unknown): ServerView {
  const s = obj(v, 'server');
  const net = obj(s.public_net, 'server.public_net');
  const ipv4 = net.ipv4 === null || net.ipv4 === undefined ? undefined : obj(net.ipv4, 'ipv4');
  const ipv6 = net.ipv6 === null || net.ipv6 === undefined ? undefined : obj(net.ipv6, 'ipv6');
  const dc = obj(s.datacenter, 'server.datacenter');
  const location = obj(dc.location, 'server.datacenter.location');
  return {
    id: num(s.id, 'server.id'),
    name: str(s.name, 'server.name'),
    status: str(s.status, 'server.status'),
    created: str(s.created, 'server.created'),
    labels: labelsOf(s.labels ?? {}, 'server.labels'),
    locked: s.locked === true,
    ipv4: ipv4 === undefined ? undefined : optStr(ipv4.ip, 'ipv4.ip'),
    ipv6: ipv6 === undefined ? undefined : optStr(ipv6.ip, 'ipv6.ip'),
    datacenter: str(dc.name, 'datacenter.name'),
    location: str(location.name, 'location.name'),
    country: str(location.country, 'location.country'),
    serverType: str(obj(s.server_type, 'server.server_type').name, 'server_type.name'),
  };
}

/** Reads an action object. */
export function readAction(v: unknown): ActionView {
  const a = obj(v, 'action');
  const error =
    a.error === null || a.error === undefined ? undefined : obj(a.error, 'action.error');
  return {
    id: num(a.id, 'action.id'),
    command: str(a.command, 'action.command'),
    status: str(a.status, 'action.status'),
    error:
      error === undefined
        ? undefined
        : { code: str(error.code, 'error.code'), message: str(error.message, 'error.message') },
  };
}

/** Reads a firewall object. */
export function readFirewall(v: unknown): FirewallView {
  const f = obj(v, 'firewall');
  return {
    id: num(f.id, 'firewall.id'),
    name: str(f.name, 'firewall.name'),
    labels: labelsOf(f.labels ?? {}, 'firewall.labels'),
    rules: list(f.rules, 'firewall.rules').map((r, i) => {
      const rule = obj(r, `firewall.rules[${i}]`);
      const direction = str(rule.direction, 'rule.direction');
      if (direction !== 'in' && direction !== 'out') {
        throw new TypeError(`rule.direction "${direction}" is neither in nor out`);
      }
      return {
        direction,
        protocol: str(rule.protocol, 'rule.protocol'),
        port: optStr(rule.port, 'rule.port'),
        sourceIps: list(rule.source_ips ?? [], 'rule.source_ips').map((x) =>
          str(x, 'rule.source_ips[]'),
        ),
        description: optStr(rule.description, 'rule.description'),
      };
    }),
    servers: list(f.applied_to ?? [], 'firewall.applied_to').flatMap((r) => {
      const entry = obj(r, 'firewall.applied_to[]');
      return entry.type === 'server'
        ? [num(obj(entry.server, 'applied_to.server').id, 'applied_to.server.id')]
        : [];
    }),
  };
}

/** Reads a location object. */
export function readLocation(v: unknown): LocationView {
  const l = obj(v, 'location');
  return {
    name: str(l.name, 'location.name'),
    country: str(l.country, 'location.country'),
    networkZone: str(l.network_zone, 'location.network_zone'),
  };
}

/** Reads a server type object; `locations` is empty when the API gives none. */
export function readServerType(v: unknown): ServerTypeView {
  const t = obj(v, 'server_type');
  return {
    name: str(t.name, 'server_type.name'),
    architecture: str(t.architecture, 'server_type.architecture'),
    locations: list(t.locations ?? [], 'server_type.locations').map((l) =>
      str(obj(l, 'server_type.locations[]').name, 'server_type.locations[].name'),
    ),
  };
}

/** Reads an image object. */
export function readImage(v: unknown): ImageView {
  const i = obj(v, 'image');
  return {
    id: num(i.id, 'image.id'),
    name: optStr(i.name, 'image.name') ?? '',
    architecture: str(i.architecture, 'image.architecture'),
    status: str(i.status, 'image.status'),
  };
}

/** The list under `key` of a listing answer, each item read with `read`, and the next page. */
export function readPage<T>(body: unknown, key: string, read: (v: unknown) => T): Page<T> {
  const b = obj(body, 'answer');
  const items = list(b[key], key).map(read);
  const meta = b.meta === undefined || b.meta === null ? undefined : obj(b.meta, 'meta');
  const pagination =
    meta?.pagination === undefined || meta.pagination === null
      ? undefined
      : obj(meta.pagination, 'meta.pagination');
  const next = pagination?.next_page;
  return {
    items,
    nextPage: next === null || next === undefined ? undefined : num(next, 'next_page'),
  };
}

/** The object under `key` of an answer. */
export function member(body: unknown, key: string): unknown {
  return obj(body, 'answer')[key];
}
