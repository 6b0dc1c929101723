/**
 * What the status page's server sends its browser code: the state of the
 * page (this replica's role, the providers, the Proxies, the problems), the
 * patches of the event stream, and a Proxy's detail. Types only: the
 * browser code (`page/`) imports them too, so both sides agree.
 *
 * Each list the page shows is a *collection* keyed by name: a patch carries
 * upserts and removals per collection: providers, Proxies and pools, each
 * a section of the page.
 *
 * @module
 */

/** A Proxy's phase as the page shows it (`Deleting` once it is being deleted, `Pending` before any). */
export type PagePhase =
  | 'Pending'
  | 'Provisioning'
  | 'Ready'
  | 'Unhealthy'
  | 'Replacing'
  | 'Deleting'
  | 'Failed';

/** Where the operator serving the page stands. */
export interface PageRole {
  /** The store the operator runs over. */
  readonly store: 'standalone' | 'kubernetes' | 'memory';
  /** `leading` serves the data; `standby` waits for the Lease; `starting` has not asked yet. */
  readonly state: 'starting' | 'standby' | 'leading';
  /** The manifests folder (standalone) or the API server's address (Kubernetes), without credentials. */
  readonly where?: string | undefined;
  /** This replica's identity in leader election. */
  readonly identity?: string | undefined;
  /** The Lease holder's identity, when another replica leads. */
  readonly leader?: string | undefined;
  /** The Pod the Lease holder runs in (its identity without the random suffix). */
  readonly leaderPod?: string | undefined;
  /** The Lease's namespace: where the Pods are. */
  readonly leaseNamespace?: string | undefined;
  /** The port the page listens on, for the `kubectl port-forward` line. */
  readonly port?: number | undefined;
}

/** One target of a provider's health. */
export interface PageTarget {
  /** The target's name (a zone, a host). */
  readonly target: string;
  /** Its address, without credentials. */
  readonly address: string;
  /** Whether its last check passed. */
  readonly ready: boolean;
  /** Why, in one word. */
  readonly reason: string;
  /** Why, in words. */
  readonly message: string;
  /** When `reason` last changed. */
  readonly lastTransitionTime: string;
}

/** A provider: configured (with its type), or only named by Proxies; with its health when checked. */
export interface ProviderView {
  /** Its name in the providers file (or in a Proxy's spec). */
  readonly name: string;
  /** Its type, when configured. */
  readonly type?: string | undefined;
  /** Whether the providers file has it. */
  readonly configured: boolean;
  /** The last health check (its ProviderHealth), when one ran. */
  readonly health?:
    | {
        /** Every target ready. */
        readonly ready: boolean;
        /** When it was checked. */
        readonly lastCheckTime?: string | undefined;
        /** Each target's outcome. */
        readonly targets: readonly PageTarget[];
      }
    | undefined;
}

/** A Proxy's probes in short, for its row. */
export interface RowProbe {
  /** `passing`, `failing`, `starting`, or `off` / `no target` when it is not probed. */
  readonly verdict: 'passing' | 'failing' | 'starting' | 'off' | 'no target';
  /** The live table's words (`ok 4ms`, `failing get.status`). */
  readonly text: string;
  /** When the last probe ran. */
  readonly at?: string | undefined;
  /** The last failure in words, while not passing. */
  readonly failure?: string | undefined;
  /** The recent probes' total latency in ms, oldest first; null for a failed one. */
  readonly spark: readonly (number | null)[];
}

/** One row of the Proxies table. */
export interface ProxyRow {
  /** `namespace/name`. */
  readonly key: string;
  /** The Proxy's namespace. */
  readonly namespace: string;
  /** The Proxy's name. */
  readonly name: string;
  /** `spec.provider`. */
  readonly provider: string;
  /** Its phase. */
  readonly phase: PagePhase;
  /** The Ready condition's reason and message, when it has one. */
  readonly ready?: { readonly reason: string; readonly message: string } | undefined;
  /** `http://ip:port`, never with credentials. */
  readonly endpoint?: string | undefined;
  /** Where the Proxy's credential is kept (`Secret NAME`, or `file NAME` standalone), once it has one. */
  readonly secret?: string | undefined;
  /** The address the probe target saw its requests come from. */
  readonly egressIP?: string | undefined;
  /** When the Proxy was created. */
  readonly created: string;
  /** Its probes, when it is probed or its status says something of them. */
  readonly probe?: RowProbe | undefined;
  /** The last provider error. */
  readonly error?: { readonly class: string; readonly message: string } | undefined;
}

/** A condition of a pool, in short. */
export interface PoolState {
  /** `True`, `False` or `Unknown`. */
  readonly status: string;
  /** Why, in one word. */
  readonly reason: string;
  /** Why, in words. */
  readonly message: string;
}

/** A ProxyPool: its counts, its rollout, rotation and remediation state. */
export interface PoolView {
  /** `namespace/name`. */
  readonly key: string;
  /** The pool's namespace. */
  readonly namespace: string;
  /** The pool's name. */
  readonly name: string;
  /** `spec.replicas`. */
  readonly desired: number;
  /** Proxies Ready and probe-verified. */
  readonly ready: number;
  /** Proxies of the current template. */
  readonly updated: number;
  /** Proxies Ready for `minReadySeconds`. */
  readonly available: number;
  /** Endpoints published. */
  readonly endpoints: number;
  /** Proxies out of the lists, draining before they go. */
  readonly draining: number;
  /** `spec.paused`. */
  readonly paused: boolean;
  /** `rotation.maxAge`, when the pool rotates. */
  readonly rotateEvery?: string | undefined;
  /** The providers of its spread (the template's alone without one). */
  readonly providers: readonly string[];
  /** The `Progressing` condition: the rollout. */
  readonly progressing?: PoolState | undefined;
  /** The `RemediationAllowed` condition. */
  readonly remediation?: PoolState | undefined;
  /** The `SpreadDegraded` condition, while true. */
  readonly spreadDegraded?: PoolState | undefined;
}

/** The collections of the page, each keyed by its rows' name (`key` for Proxies and pools). */
export interface PageCollections {
  /** The providers, by name. */
  readonly providers: readonly ProviderView[];
  /** The Proxies, by key. */
  readonly proxies: readonly ProxyRow[];
  /** The ProxyPools, by key. */
  readonly pools: readonly PoolView[];
}

/** The names of the collections. */
export type CollectionName = keyof PageCollections;

/** The whole state: the stream's first message (`event: snapshot`). */
export interface PageState extends PageCollections {
  /** Where the operator stands. */
  readonly role: PageRole;
  /** Objects the operator cannot reconcile (a manifest that does not validate), each `source: problem`. */
  readonly problems: readonly string[];
}

/** What changed since the last message (`event: patch`). */
export interface PagePatch {
  /** The role, when it changed. */
  readonly role?: PageRole | undefined;
  /** Every problem, when they changed. */
  readonly problems?: readonly string[] | undefined;
  /** New or changed rows, by collection. */
  readonly upsert?: { readonly [C in CollectionName]?: PageCollections[C] } | undefined;
  /** Rows gone, by collection: their names (keys for Proxies). */
  readonly remove?: { readonly [C in CollectionName]?: readonly string[] } | undefined;
}

/** An Event the operator recorded on a Proxy. */
export interface PageEvent {
  /** When it was recorded. */
  readonly time: string;
  /** Its type, as Kubernetes has it. */
  readonly type: 'Normal' | 'Warning';
  /** What happened, in one word (`Created`, `ProbeFailed`). */
  readonly reason: string;
  /** What happened, in words. */
  readonly message: string;
}

/** A condition of a Proxy's status. */
export interface PageCondition {
  /** `Ready`, `DataPlane`, ... */
  readonly type: string;
  /** `True`, `False` or `Unknown`. */
  readonly status: string;
  /** Why, in one word. */
  readonly reason?: string | undefined;
  /** Why, in words. */
  readonly message?: string | undefined;
  /** When its status last changed. */
  readonly lastTransitionTime: string;
}

/** One probe, as the history keeps it. */
export interface PageProbe {
  /** When it began. */
  readonly time: string;
  /** Every step passed. */
  readonly ok: boolean;
  /** The TCP connection to the proxy, in ms. */
  readonly connectMs?: number | undefined;
  /** The first byte of the proxy's answer, in ms. */
  readonly firstByteMs?: number | undefined;
  /** The whole probe, in ms. */
  readonly totalMs: number;
  /** The address the target saw. */
  readonly egressIP?: string | undefined;
  /** The step that failed, and how (`get.status: ...`). */
  readonly failure?: string | undefined;
}

/** A Proxy's detail view (`GET api/proxies/NAMESPACE/NAME`). */
export interface ProxyDetail {
  /** Its row of the table. */
  readonly row: ProxyRow;
  /** `metadata.generation`. */
  readonly generation: number;
  /** What of the spec the page shows. */
  readonly spec: {
    /** `spec.placement`. */
    readonly placement: Readonly<Record<string, string>>;
    /** `spec.port`. */
    readonly port: number;
    /** `spec.allowedSources`. */
    readonly allowedSources: readonly string[];
    /** `spec.remediation.unhealthyTimeout`, when set. */
    readonly unhealthyTimeout?: string | undefined;
    /** Whether the spec brings its own cloud-init (its text is never shown). */
    readonly customCloudInit: boolean;
  };
  /** Its instance, as the status records it. */
  readonly instance: {
    /** `status.providerID`. */
    readonly providerID?: string | undefined;
    /** The provider that holds it (`status.instanceProvider`). */
    readonly provider?: string | undefined;
    /** `status.ip`. */
    readonly ip?: string | undefined;
    /** `status.instanceState`. */
    readonly state?: string | undefined;
    /** `status.observedGeneration`. */
    readonly observedGeneration?: number | undefined;
  };
  /** `status.probe` in short: the target, the median, failures in a row. */
  readonly probe?:
    | {
        /** The URL the tunnel reaches. */
        readonly target?: string | undefined;
        /** The median total latency of the last probes. */
        readonly p50TotalMs?: number | undefined;
        /** Failures in a row. */
        readonly consecutiveFailures?: number | undefined;
        /** When a probe last passed. */
        readonly lastPassTime?: string | undefined;
      }
    | undefined;
  /** `status.conditions`. */
  readonly conditions: readonly PageCondition[];
  /** The newest Events this operator recorded on the Proxy, oldest first. */
  readonly events: readonly PageEvent[];
  /** The recent probes, oldest first. */
  readonly history: readonly PageProbe[];
}
