/**
 * The seam of the `hetzner` provider: one signal-taking method per Hetzner
 * Cloud API request it makes, over the few fields it reads (the views of
 * `answers.ts`), the request bodies it sends, and where it is decorated:
 * the contract's `observeSeam` (a child span and a debug line per call
 * and, for the production seam, the per-call budget of `timeouts`) and the
 * wire log. The production adapter (`adapter.ts`) implements it over
 * undici; tests may fake or wrap it.
 *
 * @module
 */
import { type Logger, observeSeam, type Telemetry } from '@proxy-op/contract';
import type {
  ActionView,
  CreatedServer,
  FirewallView,
  ImageView,
  LocationView,
  Page,
  ServerTypeView,
  ServerView,
} from './answers.js';
import { errorFields } from './errors.js';

/** A firewall rule in a request. */
export interface FirewallRuleBody {
  readonly direction: 'in';
  readonly protocol: 'tcp';
  readonly port: string;
  readonly source_ips: readonly string[];
  readonly description: string;
}

/** The body of a firewall create. */
export interface FirewallBody {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly rules: readonly FirewallRuleBody[];
}

/** The body of a server create, as the API takes it. */
export interface ServerBody {
  readonly name: string;
  readonly server_type: string;
  /** An image name (the API picks the server type's architecture) or ID. */
  readonly image: string | number;
  /** A location name; unset when `datacenter` is set. */
  readonly location?: string | undefined;
  /** A datacenter name (`fsn1-dc14`), when the placement names one. */
  readonly datacenter?: string | undefined;
  /** The cloud-init document, byte for byte (UTF-8 text). Never logged. */
  readonly user_data: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly start_after_create: true;
  readonly public_net: { readonly enable_ipv4: true; readonly enable_ipv6: true };
  readonly firewalls?: readonly { readonly firewall: number }[] | undefined;
  readonly ssh_keys?: readonly (string | number)[] | undefined;
}

/** The Hetzner Cloud API calls of the `hetzner` provider. Every method takes a signal, last. */
export interface HetznerSeam {
  /** `GET /servers?name=`: the server with that name, or undefined. */
  findServer(name: string, signal?: AbortSignal): Promise<ServerView | undefined>;
  /** `GET /servers/{id}`; undefined when the API answers 404. */
  getServer(id: number, signal?: AbortSignal): Promise<ServerView | undefined>;
  /** `POST /servers`: the server and its `create_server` action. */
  createServer(body: ServerBody, signal?: AbortSignal): Promise<CreatedServer>;
  /** `DELETE /servers/{id}`: the `delete_server` action; undefined when the API answers 404. */
  deleteServer(id: number, signal?: AbortSignal): Promise<ActionView | undefined>;
  /** One page of `GET /servers?label_selector=`. */
  listServers(selector: string, page: number, signal?: AbortSignal): Promise<Page<ServerView>>;
  /** `GET /firewalls?name=`: the firewall with that name, or undefined. */
  findFirewall(name: string, signal?: AbortSignal): Promise<FirewallView | undefined>;
  /** `POST /firewalls`. */
  createFirewall(body: FirewallBody, signal?: AbortSignal): Promise<FirewallView>;
  /** `POST /firewalls/{id}/actions/set_rules`. */
  setFirewallRules(
    id: number,
    rules: readonly FirewallRuleBody[],
    signal?: AbortSignal,
  ): Promise<void>;
  /** `DELETE /firewalls/{id}`; no error when it is gone. */
  deleteFirewall(id: number, signal?: AbortSignal): Promise<void>;
  /** `GET /locations`. */
  listLocations(signal?: AbortSignal): Promise<LocationView[]>;
  /** One page of `GET /server_types`. */
  listServerTypes(page: number, signal?: AbortSignal): Promise<Page<ServerTypeView>>;
  /** `GET /images?name=` for a name, `GET /images/{id}` for an ID: every image it names. */
  findImages(image: string, signal?: AbortSignal): Promise<ImageView[]>;
}

/** The names of the seam's calls, in a fixed order (logs, budgets, tests). */
export const SEAM_CALLS = [
  'findServer',
  'getServer',
  'createServer',
  'deleteServer',
  'listServers',
  'findFirewall',
  'createFirewall',
  'setFirewallRules',
  'deleteFirewall',
  'listLocations',
  'listServerTypes',
  'findImages',
] as const satisfies readonly (keyof HetznerSeam)[];

/** The name of one of the seam's calls. */
export type SeamCall = (typeof SEAM_CALLS)[number];

/** Per-call budgets and the waits of Delete, in milliseconds (contract §4.16): the config's `timeouts`. */
export interface HetznerTimeouts {
  /** One read: a server, a firewall, a page of a listing, the Checker's look-ups (default 30000). */
  readonly readMs: number;
  /** One write: a create, a delete, a rule change, until the API answered (default 60000). */
  readonly writeMs: number;
  /** How often Delete looks whether the server is gone (default 1000). */
  readonly pollMs: number;
  /** How long Delete waits for the server to be gone before it is Transient (default 90000). */
  readonly deleteWaitMs: number;
}

/** The calls that write: their budget is `timeouts.writeMs`; every other call reads. */
const WRITES: ReadonlySet<string> = new Set<SeamCall>([
  'createServer',
  'deleteServer',
  'createFirewall',
  'setFirewallRules',
  'deleteFirewall',
]);

/** The budget of one call in ms: `writeMs` for a write, `readMs` for every other call. */
export function callBudget(timeouts: HetznerTimeouts, method: string): number {
  return WRITES.has(method) ? timeouts.writeMs : timeouts.readMs;
}

/** Safe identifiers of a seam call, for its span and log line. */
export function seamFields(method: string, args: readonly unknown[]): Record<string, string> {
  const [a, b] = args;
  const name = (x: unknown) =>
    typeof x === 'object' && x !== null && typeof (x as { name?: unknown }).name === 'string'
      ? (x as { name: string }).name
      : '';
  switch (method) {
    case 'findServer':
      return { server: String(a) };
    case 'getServer':
    case 'deleteServer':
      return { serverId: String(a) };
    case 'createServer':
      return { server: name(a) };
    case 'listServers':
      return { selector: String(a), page: String(b) };
    case 'findFirewall':
      return { firewall: String(a) };
    case 'createFirewall':
      return { firewall: name(a) };
    case 'setFirewallRules':
    case 'deleteFirewall':
      return { firewallId: String(a) };
    case 'listServerTypes':
      return { page: String(a) };
    case 'findImages':
      return { image: String(a) };
    default:
      return {};
  }
}

/** A copy of a request body with its `user_data` replaced by its size. */
export function elideUserData(body: unknown): unknown {
  const userData = (body as { user_data?: unknown }).user_data;
  if (typeof userData !== 'string') return body;
  return { ...(body as object), user_data: `<${Buffer.byteLength(userData)} bytes elided>` };
}

/**
 * The wire log: one trace line per call with its identifiers and, when
 * `logPayloads` is set, its request body, the user data always elided.
 */
export function wireLogged(seam: HetznerSeam, log: Logger, logPayloads: boolean): HetznerSeam {
  return new Proxy(seam, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        const fields: Record<string, unknown> = { call: prop, ...seamFields(prop, args) };
        const body = args.find(
          (x) => typeof x === 'object' && x !== null && !(x instanceof AbortSignal),
        );
        if (logPayloads && body !== undefined) fields.body = elideUserData(body);
        log.trace(fields, 'hetzner request');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** What {@link decorateSeam} takes besides the seam. */
export interface DecorateOptions extends Pick<Telemetry, 'tracer' | 'logger'> {
  /** The configured provider name. */
  readonly provider: string;
  /** The config's budgets and `logPayloads`. */
  readonly config: { readonly timeouts: HetznerTimeouts; readonly logPayloads: boolean };
  /** The provider's own logger, for the wire log. */
  readonly log: Logger;
  /**
   * Whether each call gets its budget from `config.timeouts`: true for the
   * production seam; a seam from the deps is bounded by the caller's signal only.
   */
  readonly budgeted: boolean;
}

/**
 * The seam the operations use: `seam` under `observeSeam` (a
 * `hetzner.<call>` child span and a `hetzner call` debug line per call,
 * with its {@link seamFields} and, on failure, its `errorFields`; with
 * `budgeted`, the per-call budget), and the wire log over it (outside, so
 * the budget still finds each method's declared signal parameter).
 */
export function decorateSeam(seam: HetznerSeam, o: DecorateOptions): HetznerSeam {
  const observed = observeSeam(seam, {
    prefix: 'hetzner',
    provider: o.provider,
    tracer: o.tracer,
    logger: o.logger,
    fields: seamFields,
    errorFields,
    budget: o.budgeted ? (method) => callBudget(o.config.timeouts, method) : undefined,
  });
  return wireLogged(observed, o.log, o.config.logPayloads);
}
