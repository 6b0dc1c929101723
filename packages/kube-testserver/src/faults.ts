// Fault injection and request counting: which requests a fault or a count applies to, the state
// of the faults a test arms (delays, failures, conflicts), and the counters of the requests served.
/** Which requests a fault or a count applies to; every given field must match. */
export interface RequestFilter {
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection. */
  readonly verb?: string | readonly string[];
  /** API group (`''` for core). */
  readonly group?: string;
  /** Resource (plural), e.g. `pods`, `leases`. */
  readonly resource?: string;
  /** Subresource, e.g. `status` (`''` for the main resource). */
  readonly subresource?: string;
  readonly namespace?: string;
}

/** One request as faults and counters see it. */
export interface RequestRecord {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  /** The URL path, for non-resource requests (`/version`, `/apis`). */
  readonly path: string;
}

/** Whether a request matches a filter. */
export function matches(filter: RequestFilter | undefined, r: RequestRecord): boolean {
  if (filter === undefined) return true;
  if (filter.verb !== undefined) {
    const verbs: readonly string[] = typeof filter.verb === 'string' ? [filter.verb] : filter.verb;
    if (!verbs.includes(r.verb)) return false;
  }
  if (filter.group !== undefined && filter.group !== r.group) return false;
  if (filter.resource !== undefined && filter.resource !== r.resource) return false;
  if (filter.subresource !== undefined && filter.subresource !== r.subresource) return false;
  if (filter.namespace !== undefined && filter.namespace !== r.namespace) return false;
  return true;
}

/** The verbs that write. */
export const WRITE_VERBS: readonly string[] = [
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
];

interface Delay {
  readonly ms: number;
  readonly filter: RequestFilter | undefined;
}

interface Failure {
  remaining: number;
  readonly status: number;
  readonly reason: string;
  readonly message: string;
  readonly filter: RequestFilter | undefined;
}

/** The state behind {@link Faults}, read by the request handler. */
export class FaultState {
  delays: Delay[] = [];
  failures: Failure[] = [];
  conflicts: { remaining: number; filter: RequestFilter | undefined }[] = [];

  /** How long to hold a request before answering it. */
  delayFor(r: RequestRecord): number {
    let ms = 0;
    for (const d of this.delays) if (matches(d.filter, r)) ms = Math.max(ms, d.ms);
    return ms;
  }

  /** The failure to answer instead of serving a request, if one is armed for it. */
  takeFailure(r: RequestRecord): Failure | undefined {
    const f = this.failures.find((x) => x.remaining !== 0 && matches(x.filter, r));
    if (f !== undefined && f.remaining > 0) f.remaining--;
    return f;
  }

  /** Whether to answer this write with 409 Conflict. */
  takeConflict(r: RequestRecord): boolean {
    if (!WRITE_VERBS.includes(r.verb)) return false;
    const c = this.conflicts.find((x) => x.remaining > 0 && matches(x.filter, r));
    if (c === undefined) return false;
    c.remaining--;
    return true;
  }

  reset(): void {
    this.delays = [];
    this.failures = [];
    this.conflicts = [];
  }
}

/** Per-request counts, by verb and resource. */
export class RequestCounters {
  readonly #records: RequestRecord[] = [];

  /** Records one request (called by the server for every request it receives). */
  record(r: RequestRecord): void {
    this.#records.push(r);
  }

  /** How many requests matched the filter (every request without one). */
  count(filter?: RequestFilter): number {
    let n = 0;
    for (const r of this.#records) if (matches(filter, r)) n++;
    return n;
  }

  /** How many writes (create, update, patch, delete, deletecollection) matched the filter. */
  writes(filter?: Omit<RequestFilter, 'verb'>): number {
    return this.count({ ...filter, verb: WRITE_VERBS });
  }

  /** Counts grouped by verb, group, resource and subresource, most frequent first. */
  summary(): {
    verb: string;
    group: string;
    resource: string;
    subresource: string;
    count: number;
  }[] {
    const m = new Map<
      string,
      { verb: string; group: string; resource: string; subresource: string; count: number }
    >();
    for (const r of this.#records) {
      const k = `${r.verb}|${r.group}|${r.resource}|${r.subresource}`;
      const e = m.get(k);
      if (e === undefined)
        m.set(k, {
          verb: r.verb,
          group: r.group,
          resource: r.resource,
          subresource: r.subresource,
          count: 1,
        });
      else e.count++;
    }
    return [...m.values()].sort((a, b) => b.count - a.count);
  }

  /** Every request recorded, oldest first. */
  all(): readonly RequestRecord[] {
    return [...this.#records];
  }

  /** Forgets every count. */
  reset(): void {
    this.#records.length = 0;
  }
}
