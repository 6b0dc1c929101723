/**
 * The seam of the `gcp` provider: one signal-taking method per Compute
 * Engine API call it makes, over the few fields it reads, and where it is
 * decorated: the contract's `observeSeam` (a child span and a debug line
 * per call and, for the production seam, the per-call budget of
 * `timeouts`) and the wire log. What a call answers is read into the views
 * of `answers.ts`. The production adapter (`adapter.ts`) implements it
 * with `@google-cloud/compute`; tests may wrap it.
 *
 * @module
 */
import { type Logger, observeSeam, type Telemetry } from '@proxy-op/contract';
import {
  type FirewallView,
  type InstanceView,
  type ListedInstances,
  lastSegment,
  type OperationView,
} from './answers.js';
import { errorFields } from './errors.js';

/** The metadata key cloud-init reads its user data from. */
export const USER_DATA_KEY = 'user-data';

/** The instance body of an insert, as the API takes it (JSON field names). */
export interface InstanceBody {
  readonly name: string;
  readonly machineType: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly tags: { readonly items: readonly string[] };
  readonly metadata: {
    readonly items: readonly { readonly key: string; readonly value: string }[];
  };
  readonly disks: readonly {
    readonly boot: boolean;
    readonly autoDelete: boolean;
    readonly initializeParams: {
      readonly sourceImage: string;
      readonly diskSizeGb: string;
      readonly diskType: string;
      readonly labels: Readonly<Record<string, string>>;
    };
  }[];
  readonly networkInterfaces: readonly {
    readonly network: string;
    readonly subnetwork?: string | undefined;
    readonly accessConfigs?:
      | readonly { readonly name: string; readonly type: 'ONE_TO_ONE_NAT' }[]
      | undefined;
  }[];
  /** Set for Spot instances only (Standard ones take the API's defaults). */
  readonly scheduling?:
    | {
        readonly provisioningModel: 'SPOT';
        readonly instanceTerminationAction: 'STOP' | 'DELETE';
        readonly automaticRestart: false;
        readonly onHostMaintenance: 'TERMINATE';
      }
    | undefined;
}

/** The body of a firewall rule insert. */
export interface FirewallBody {
  readonly name: string;
  readonly description: string;
  readonly network: string;
  readonly direction: 'INGRESS';
  readonly priority: number;
  readonly sourceRanges: readonly string[];
  readonly targetTags: readonly string[];
  readonly allowed: readonly { readonly IPProtocol: 'tcp'; readonly ports: readonly string[] }[];
}

/** The Compute Engine calls of the `gcp` provider. Every method takes a signal. */
export interface ComputeSeam {
  /** `instances.get`; undefined when the API answers 404. */
  getInstance(zone: string, name: string, signal?: AbortSignal): Promise<InstanceView | undefined>;
  /** `instances.insert`: the operation the API accepted (which may already be DONE with errors). */
  insertInstance(zone: string, body: InstanceBody, signal?: AbortSignal): Promise<OperationView>;
  /** `instances.delete`; undefined when the API answers 404. */
  deleteInstance(
    zone: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<OperationView | undefined>;
  /** `instances.aggregatedList` with partial success, every page: the instances the filter matches. */
  listInstances(filter: string, signal?: AbortSignal): Promise<ListedInstances>;
  /** One `instances.aggregatedList` page of size 1 with the filter: the Checker's probe. */
  probeInstances(filter: string, signal?: AbortSignal): Promise<void>;
  /** `zoneOperations.list` filtered on the instance's link: its operations, newest first. */
  listInstanceOperations(
    zone: string,
    targetLink: string,
    signal?: AbortSignal,
  ): Promise<OperationView[]>;
  /** `zoneOperations.delete`; no error when it is gone. */
  deleteOperation(zone: string, name: string, signal?: AbortSignal): Promise<void>;
  /** `firewalls.get`; undefined when the API answers 404. */
  getFirewall(name: string, signal?: AbortSignal): Promise<FirewallView | undefined>;
  /** `firewalls.insert`. */
  insertFirewall(body: FirewallBody, signal?: AbortSignal): Promise<OperationView>;
  /** `firewalls.delete`; undefined when the API answers 404. */
  deleteFirewall(name: string, signal?: AbortSignal): Promise<OperationView | undefined>;
}

/** The name of one of the seam's calls. */
export type SeamCall = (typeof SEAM_CALLS)[number];

/** The names of the seam's calls, in a fixed order (logs, budgets, tests). */
export const SEAM_CALLS = [
  'getInstance',
  'insertInstance',
  'deleteInstance',
  'listInstances',
  'probeInstances',
  'listInstanceOperations',
  'deleteOperation',
  'getFirewall',
  'insertFirewall',
  'deleteFirewall',
] as const satisfies readonly (keyof ComputeSeam)[];

/** Per-call time budgets, in milliseconds (contract §4.16): the config's `timeouts`. */
export interface GcpTimeouts {
  /** One read: an instance, a firewall rule, a page of a listing, the operations of an instance (default 30000). */
  readonly readMs: number;
  /** One write: an insert or a delete, until the API has accepted it (default 60000). */
  readonly writeMs: number;
}

/** The calls that write: their budget is `timeouts.writeMs`; every other call reads. */
const WRITES: ReadonlySet<string> = new Set<SeamCall>([
  'insertInstance',
  'deleteInstance',
  'insertFirewall',
  'deleteFirewall',
]);

/**
 * The budget of one call in ms: `timeouts.writeMs` for an insert or a
 * delete of an instance or a rule (until the API accepted it),
 * `timeouts.readMs` for every other call.
 */
export function callBudget(timeouts: GcpTimeouts, method: string): number {
  return WRITES.has(method) ? timeouts.writeMs : timeouts.readMs;
}

/** Safe identifiers of a seam call, for its span and log line. */
export function seamFields(method: string, args: readonly unknown[]): Record<string, string> {
  const [a, b] = args;
  const name = (x: unknown) =>
    typeof x === 'object' && x !== null && typeof (x as { name?: unknown }).name === 'string'
      ? (x as { name: string }).name
      : undefined;
  switch (method) {
    case 'getInstance':
    case 'deleteInstance':
      return { zone: String(a), name: String(b) };
    case 'insertInstance':
      return { zone: String(a), name: name(b) ?? '' };
    case 'listInstanceOperations':
      return { zone: String(a), name: lastSegment(String(b)) };
    case 'deleteOperation':
      return { zone: String(a), operation: String(b) };
    case 'getFirewall':
    case 'deleteFirewall':
      return { firewall: String(a) };
    case 'insertFirewall':
      return { firewall: name(a) ?? '' };
    default:
      return {};
  }
}

/**
 * The wire log: one trace line per call with its identifiers and, when
 * `logPayloads` is set, its request body, the user-data always elided.
 */
export function wireLogged(seam: ComputeSeam, log: Logger, logPayloads: boolean): ComputeSeam {
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
        log.trace(fields, 'gcp request');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A copy of a request body with every user-data metadata value replaced by its size. */
export function elideUserData(body: unknown): unknown {
  const items = (body as { metadata?: { items?: unknown } }).metadata?.items;
  if (!Array.isArray(items)) return body;
  return {
    ...(body as object),
    metadata: {
      items: items.map((i: { key?: unknown; value?: unknown }) =>
        i?.key === USER_DATA_KEY && typeof i.value === 'string'
          ? { key: i.key, value: `<${Buffer.byteLength(i.value)} bytes elided>` }
          : i,
      ),
    },
  };
}

/** What {@link decorateSeam} takes besides the seam. */
export interface DecorateOptions extends Pick<Telemetry, 'tracer' | 'logger'> {
  /** The configured provider name. */
  readonly provider: string;
  /** The config's budgets (`timeouts`) and `logPayloads`. */
  readonly config: { readonly timeouts: GcpTimeouts; readonly logPayloads: boolean };
  /** The provider's own logger, for the wire log. */
  readonly log: Logger;
  /**
   * Whether each call gets its budget from `config.timeouts`
   * ({@link callBudget}): true for the production seam; a seam from the deps
   * is bounded by the caller's signal only.
   */
  readonly budgeted: boolean;
}

/**
 * The seam the operations use: `seam` under `observeSeam` (a `gcp.<call>`
 * child span and a `gcp call` debug line per call, with its
 * {@link seamFields} and, on failure, its `errorFields`; with `budgeted`,
 * the per-call budget: the call gets the caller's signal joined with its
 * budget and, past it, rejects with the contract's `BudgetError`), and the
 * wire log over it. The wire log goes outside: the budget finds a
 * method's signal by the method's declared parameters, which a
 * rest-parameter wrapper below it would hide.
 */
export function decorateSeam(seam: ComputeSeam, o: DecorateOptions): ComputeSeam {
  const observed = observeSeam(seam, {
    prefix: 'gcp',
    provider: o.provider,
    tracer: o.tracer,
    logger: o.logger,
    fields: seamFields,
    errorFields,
    budget: o.budgeted ? (method) => callBudget(o.config.timeouts, method) : undefined,
  });
  return wireLogged(observed, o.log, o.config.logPayloads);
}
