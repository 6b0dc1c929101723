/**
 * The seam's views of what Compute Engine answers (instances, operations,
 * firewall rules, a listing of every zone: the few fields the provider
 * reads), and the readers that make them from the SDK's answers. An answer
 * that is not what the API documents is a `TypeError` (the operation shell
 * makes it a malformed answer).
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
  /** `SPOT` or `STANDARD` (the API's default when it says nothing). */
  readonly provisioningModel: string;
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

/** The last path segment of a resource URL (`.../zones/us-central1-a` → `us-central1-a`). */
export function lastSegment(url: string | null | undefined): string {
  if (typeof url !== 'string') return '';
  return url.slice(url.lastIndexOf('/') + 1);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** An instance as the provider reads it; a `TypeError` when the answer is not one. */
export function instanceView(x: unknown, zone: string | undefined, what: string): InstanceView {
  if (x === null || typeof x !== 'object')
    throw new TypeError(`${what}: the answer is not an instance`);
  const i = x as Record<string, unknown>;
  const name = str(i.name);
  const status = str(i.status);
  if (name === undefined) throw new TypeError(`${what}: the instance has no name`);
  if (status === undefined) throw new TypeError(`${what}: instance ${name} has no status`);
  const labels: Record<string, string> = {};
  if (i.labels !== undefined && i.labels !== null) {
    if (typeof i.labels !== 'object')
      throw new TypeError(`${what}: labels of ${name} are not a map`);
    for (const [k, v] of Object.entries(i.labels as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new TypeError(`${what}: label ${k} of ${name} is not text`);
      labels[k] = v;
    }
  }
  const nics = Array.isArray(i.networkInterfaces) ? i.networkInterfaces : [];
  const tags = (i.tags as { items?: unknown } | null | undefined)?.items;
  return {
    name,
    zone: str(lastSegment(str(i.zone))) ?? zone ?? '',
    status,
    labels,
    creationTimestamp: str(i.creationTimestamp),
    networkInterfaces: nics.map((n) => {
      const nic = (n ?? {}) as { networkIP?: unknown; accessConfigs?: unknown };
      const first = Array.isArray(nic.accessConfigs)
        ? (nic.accessConfigs[0] as { natIP?: unknown } | undefined)
        : undefined;
      return { networkIP: str(nic.networkIP), natIP: str(first?.natIP) };
    }),
    tags: Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [],
    provisioningModel:
      str(
        (i.scheduling as { provisioningModel?: unknown } | null | undefined)?.provisioningModel,
      ) ?? 'STANDARD',
  };
}

/** An operation as the provider reads it; a `TypeError` when the answer is not one. */
export function operationView(x: unknown, what: string): OperationView {
  if (x === null || typeof x !== 'object')
    throw new TypeError(`${what}: the answer is not an operation`);
  const o = x as Record<string, unknown>;
  const name = str(o.name);
  const status = str(o.status);
  if (name === undefined) throw new TypeError(`${what}: the operation has no name`);
  if (status === undefined) throw new TypeError(`${what}: operation ${name} has no status`);
  const errors = ((o.error as { errors?: unknown } | null | undefined)?.errors ?? []) as unknown;
  if (!Array.isArray(errors)) throw new TypeError(`${what}: errors of ${name} are not a list`);
  const http = o.httpErrorStatusCode;
  return {
    name,
    operationType: str(o.operationType) ?? '',
    status,
    targetLink: str(o.targetLink) ?? '',
    insertTime: str(o.insertTime) ?? '',
    errors: errors.map((e) => {
      const item = (e ?? {}) as { code?: unknown; message?: unknown };
      return { code: str(item.code) ?? 'UNKNOWN', message: str(item.message) ?? '' };
    }),
    httpErrorStatusCode: typeof http === 'number' && http > 0 ? http : undefined,
  };
}

/** A firewall rule as the provider reads it; a `TypeError` when the answer is not one. */
export function firewallView(x: unknown): FirewallView {
  if (x === null || typeof x !== 'object')
    throw new TypeError('firewalls.get: the answer is not a rule');
  const r = x as Record<string, unknown>;
  const name = str(r.name);
  if (name === undefined) throw new TypeError('firewalls.get: the rule has no name');
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : [];
  return {
    name,
    description: typeof r.description === 'string' ? r.description : '',
    sourceRanges: strings(r.sourceRanges),
    targetTags: strings(r.targetTags),
    ports: (Array.isArray(r.allowed) ? r.allowed : []).flatMap((a) => {
      const rule = (a ?? {}) as { IPProtocol?: unknown; ports?: unknown };
      return rule.IPProtocol === 'tcp' ? strings(rule.ports) : [];
    }),
  };
}

/** Adds the instances of one scope of an aggregated listing, or notes it unreachable. */
export function scopedInstances(
  scope: unknown,
  list: unknown,
  out: InstanceView[],
  unreachable: string[],
): void {
  if (typeof scope !== 'string' || list === null || typeof list !== 'object') {
    throw new TypeError('instances.aggregatedList: a scope is not a scoped list');
  }
  const l = list as { instances?: unknown; warning?: { code?: unknown } | null };
  if (l.warning?.code === 'UNREACHABLE') {
    unreachable.push(lastSegment(scope));
    return;
  }
  if (l.instances === undefined || l.instances === null) return;
  if (!Array.isArray(l.instances)) {
    throw new TypeError(`instances.aggregatedList: instances of ${scope} are not a list`);
  }
  const zone = scope.startsWith('zones/') ? lastSegment(scope) : undefined;
  for (const inst of l.instances) out.push(instanceView(inst, zone, 'instances.aggregatedList'));
}
