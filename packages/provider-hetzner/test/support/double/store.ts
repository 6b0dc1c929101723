// Test support (not a test file): the resources of the Hetzner Cloud API double (servers,
// firewalls, actions) and their JSON, in the shapes the API documents and hcloud-go reads:
// a server with `public_net.ipv4`/`ipv6` (its /64), `datacenter.location` (with `country`),
// `server_type`, `image`, `labels`, `locked`; a firewall with `rules` and `applied_to`; an
// action with `command`, `status`, `progress`, `resources` and `error`.
import {
  datacenterJson,
  type ImageRec,
  imageJson,
  type Json,
  LOCATIONS,
  type ServerTypeRec,
  serverTypeJson,
} from './catalogue.js';

/** A server as the double keeps it. */
export interface ServerRec {
  readonly id: number;
  name: string;
  status: string;
  readonly created: Date;
  labels: Record<string, string>;
  locked: boolean;
  ipv4: { id: number; ip: string } | undefined;
  ipv6: { id: number; ip: string } | undefined;
  readonly datacenter: string;
  readonly serverType: ServerTypeRec;
  readonly image: ImageRec;
  readonly userData: string | undefined;
  readonly sshKeys: readonly (string | number)[];
  firewalls: number[];
}

/** A firewall rule as the API answers it. */
export interface RuleRec {
  direction: string;
  source_ips: string[];
  destination_ips: string[];
  protocol: string;
  port: string | null;
  description: string | null;
}

/** A firewall as the double keeps it. */
export interface FirewallRec {
  readonly id: number;
  name: string;
  labels: Record<string, string>;
  readonly created: Date;
  rules: RuleRec[];
  /** The servers it is applied to, by ID. */
  servers: number[];
}

/** An action as the double keeps it. */
export interface ActionRec {
  readonly id: number;
  readonly command: string;
  status: 'running' | 'success' | 'error';
  progress: number;
  readonly started: Date;
  finished: Date | undefined;
  readonly resources: { id: number; type: string }[];
  error: { code: string; message: string } | undefined;
}

/** RFC 3339 as the API writes it: whole seconds, `+00:00`. */
export function apiTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

export function actionJson(a: ActionRec): Json {
  return {
    id: a.id,
    command: a.command,
    status: a.status,
    progress: a.progress,
    started: apiTime(a.started),
    finished: a.finished === undefined ? null : apiTime(a.finished),
    resources: a.resources,
    error: a.error ?? null,
  };
}

export function firewallJson(f: FirewallRec): Json {
  return {
    id: f.id,
    name: f.name,
    labels: { ...f.labels },
    created: apiTime(f.created),
    rules: f.rules.map((r) => ({ ...r })),
    applied_to: f.servers.map((id) => ({ type: 'server', server: { id } })),
  };
}

export function serverJson(s: ServerRec, types: readonly ServerTypeRec[]): Json {
  return {
    id: s.id,
    name: s.name,
    status: s.status,
    created: apiTime(s.created),
    public_net: {
      ipv4:
        s.ipv4 === undefined
          ? null
          : {
              id: s.ipv4.id,
              ip: s.ipv4.ip,
              blocked: false,
              dns_ptr: `static.${s.ipv4.ip.split('.').reverse().join('.')}.clients.your-server.de`,
            },
      ipv6:
        s.ipv6 === undefined ? null : { id: s.ipv6.id, ip: s.ipv6.ip, blocked: false, dns_ptr: [] },
      floating_ips: [],
      firewalls: s.firewalls.map((id) => ({ id, status: 'applied' })),
    },
    private_net: [],
    server_type: serverTypeJson(s.serverType),
    datacenter: datacenterJson(s.datacenter, types),
    image: imageJson(s.image),
    iso: null,
    rescue_enabled: false,
    locked: s.locked,
    backup_window: null,
    outgoing_traffic: 0,
    ingoing_traffic: 0,
    included_traffic: 21990232555520,
    protection: { delete: false, rebuild: false },
    labels: { ...s.labels },
    volumes: [],
    load_balancers: [],
    primary_disk_size: s.serverType.disk,
    placement_group: null,
  };
}

/** The location of a datacenter name. */
export function locationOf(datacenter: string): (typeof LOCATIONS)[number] | undefined {
  return LOCATIONS.find((l) => datacenter.startsWith(`${l.name}-`));
}

/** One page of `items` as the API paginates: `page` from 1, `per_page` up to 50 (default 25). */
export function paginate<T>(
  items: readonly T[],
  query: URLSearchParams,
): { items: T[]; pagination: Json } {
  const perPage = Math.min(50, Math.max(1, Number(query.get('per_page') ?? 25) || 25));
  const page = Math.max(1, Number(query.get('page') ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  return {
    items: items.slice((page - 1) * perPage, page * perPage),
    pagination: {
      page,
      per_page: perPage,
      previous_page: page > 1 ? page - 1 : null,
      next_page: page < last ? page + 1 : null,
      last_page: last,
      total_entries: items.length,
    },
  };
}
