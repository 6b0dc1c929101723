/**
 * The seam of the `gcp` provider: one signal-taking method per Compute
 * Engine API call it makes, over the few fields it reads. The production
 * adapter (`adapter.ts`) implements it with `@google-cloud/compute`; tests
 * may wrap it.
 *
 * @module
 */

/** An instance, as far as the provider reads it. */
export interface InstanceView {
  readonly name: string;
  /** The zone's name (`us-central1-a`). */
  readonly zone: string;
  /** The API's status (`PROVISIONING`, `RUNNING`, ...). */
  readonly status: string;
  readonly labels: Readonly<Record<string, string>>;
  /** RFC 3339, as the API writes it. */
  readonly creationTimestamp: string | undefined;
  /** Addresses of each network interface, in order. */
  readonly networkInterfaces: readonly {
    readonly networkIP: string | undefined;
    readonly natIP: string | undefined;
  }[];
  /** Network tags. */
  readonly tags: readonly string[];
}

/** One error of a failed operation. */
export interface OperationErrorItem {
  /** The API's error type (`QUOTA_EXCEEDED`, `RESOURCE_NOT_FOUND`, ...). */
  readonly code: string;
  readonly message: string;
}

/** A zonal or global operation. */
export interface OperationView {
  readonly name: string;
  /** `insert`, `delete`, ... */
  readonly operationType: string;
  /** `PENDING`, `RUNNING` or `DONE`. */
  readonly status: string;
  readonly targetLink: string;
  /** RFC 3339. */
  readonly insertTime: string;
  /** Empty unless the operation failed. */
  readonly errors: readonly OperationErrorItem[];
  /** The HTTP status of a failed operation (403 for quota). */
  readonly httpErrorStatusCode: number | undefined;
}

/** A firewall rule, as far as the provider reads it. */
export interface FirewallView {
  readonly name: string;
  readonly description: string;
  readonly sourceRanges: readonly string[];
  readonly targetTags: readonly string[];
  /** The TCP ports the rule allows. */
  readonly ports: readonly string[];
}

/** What a listing of every zone found. */
export interface ListedInstances {
  readonly instances: readonly InstanceView[];
  /** Zones the API reported unreachable (left out). */
  readonly unreachable: readonly string[];
}

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
