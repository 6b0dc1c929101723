import type { EgressPolicy } from '@proxy-op/egress';
import type { CallOptions } from './abort.js';

/** The lifecycle state a provider reports for an instance. */
export type State = 'Provisioning' | 'Running' | 'Stopped' | 'Terminated' | 'Preempted';

/** The states, as values. */
export const State = {
  /** Being created or booting; not serving yet. */
  Provisioning: 'Provisioning',
  /** Serving: always reported together with a routable IPv4 address. */
  Running: 'Running',
  /** Exists but does not run (or the backend state is unknown). */
  Stopped: 'Stopped',
  /** Finished for good; will not run again. */
  Terminated: 'Terminated',
  /**
   * Taken back by the backend (a spot or preemptible instance it stopped or
   * is deleting to reclaim capacity): it will not serve again. It is not the
   * proxy's failure: the caller replaces it and counts no failure against
   * it. Only a provider whose profile says `preemption: 'possible'`
   * (§4.22) reports it.
   */
  Preempted: 'Preempted',
} as const satisfies Record<State, State>;

/**
 * Where and on what an instance runs. Each provider documents which fields
 * it uses, which are required, and which it ignores.
 */
export interface Placement {
  /** The region (a cloud region, or a provider's own grouping of hosts). */
  readonly region?: string | undefined;
  /** The zone within the region, or a host or node. */
  readonly zone?: string | undefined;
  /** The size of the instance, in the backend's own terms. */
  readonly machineType?: string | undefined;
  /** The image or template the instance boots from. */
  readonly image?: string | undefined;
}

/** What `create` is asked to make. */
export interface CreateRequest {
  /** The instance name: a lowercase DNS label of at most 63 characters. */
  readonly name: string;
  /** The namespace of the Proxy that asks (informational for most providers). */
  readonly namespace: string;
  /** The Proxy's UID, written into the ownership mark. */
  readonly uid: string;
  /** The TCP port the proxy listens on. */
  readonly port: number;
  /** The cloud-init user data, passed byte for byte; never logged. */
  readonly cloudInit: Uint8Array;
  /** Where and on what the instance runs. */
  readonly placement: Placement;
  /**
   * The CIDRs (or bare addresses) the proxy serves; everyone else is
   * refused. The rendered cloud-init already enforces them where a proxy
   * runs from it; a provider that controls access itself (a firewall rule,
   * a generated Squid config, a local process) uses them. Omitted, the
   * provider's configured default applies.
   */
  readonly allowedSources?: readonly string[] | undefined;
  /**
   * The installation that owns the instance (see {@link DEFAULT_INSTALLATION}).
   * Omitted means the default installation.
   */
  readonly installation?: string | undefined;
  /**
   * Basic authentication for the proxy's clients, on top of
   * `allowedSources` (a client must be allowed and authenticated). The
   * rendered cloud-init already carries it where a proxy runs from it; a
   * provider that configures its proxy itself (a Pod, a local process)
   * delivers {@link ProxyAuth.passwordFile} to it. Omitted: sources only.
   */
  readonly auth?: ProxyAuth | undefined;
  /**
   * Where the proxy may connect to on its clients' behalf: `allow` and
   * `deny` lists of CIDRs, addresses and host names (each with an optional
   * port) and the ports `CONNECT` and plain HTTP may reach (see
   * `@proxy-op/egress`). Omitted, the safe defaults apply: no loopback,
   * link-local, metadata, private, multicast or broadcast destination, the
   * host's own addresses and the proxy itself refused, `CONNECT` to 443
   * only. A provider that configures its proxy itself (a generated Squid
   * config, a local process) passes it on.
   */
  readonly egress?: EgressPolicy | undefined;
}

/**
 * What a proxy checks its clients' Basic credentials against. The password
 * file holds hashes, not passwords, but it is treated like `cloudInit`:
 * passed byte for byte, never logged, never in an error or a span.
 */
export interface ProxyAuth {
  /**
   * The realm the proxy names in its `Proxy-Authenticate` challenge: 1 to
   * 200 printable ASCII characters, without `"` or `\`.
   */
  readonly realm: string;
  /**
   * The password file: one `username:hash` line per credential, the hash
   * SHA-512-crypt (`$6$`), which Squid's `basic_ncsa_auth` and
   * `@proxy-op/forward-proxy` both accept. During a rotation it holds the
   * old and the new credential.
   */
  readonly passwordFile: Uint8Array;
}

/**
 * Where an instance runs, in terms that mean the same on every provider:
 * the provider's own region and zone names, and the country they are in
 * where the provider knows it (a region table). Each field is left out
 * when the provider has no such notion or cannot tell.
 */
export interface Location {
  /** The provider's region name (`us-central1`, `fsn1`, `eu-west-1`, a cluster's region label). */
  readonly region?: string | undefined;
  /** The provider's zone name within the region (`us-central1-a`, a node or host). */
  readonly zone?: string | undefined;
  /** The country, as an upper-case ISO 3166-1 alpha-2 code (`DE`, `US`). */
  readonly country?: string | undefined;
}

/** An instance as the backend reports it. */
export interface Instance {
  /** The provider ID: opaque to callers, parsed strictly by the provider. */
  readonly id: string;
  /** The UID from the ownership mark; empty when the mark has none. */
  readonly uid: string;
  /** Absent in `listByTag` results of providers that do not read state there. */
  readonly state?: State | undefined;
  /** A routable IPv4 address; always present when `state` is Running. */
  readonly ip?: string | undefined;
  /** When the instance was created, read back from the backend; epoch 0 when unreadable. */
  readonly createdAt: Date;
  /** The installation from the mark, when the provider read it. */
  readonly installation?: string | undefined;
  /**
   * Where the instance runs (see {@link Location}); left out by a provider
   * with no notion of place (a local process). A provider that bills
   * (§4.21) reports at least the region.
   */
  readonly location?: Location | undefined;
  /**
   * The IPv6 range the proxy may send from, as a CIDR (`2001:db8:1::/64`),
   * once the backend has routed it to the instance: reported by a provider
   * whose profile says `ipv6Egress: 'range'` (§4.23) for a Running instance.
   */
  readonly ipv6Range?: string | undefined;
}

/**
 * Options of `delete`. The owner fields protect an instance that took the
 * name after the caller last looked: when set, Delete leaves alone (and
 * succeeds) an instance whose mark names another installation, or another
 * non-empty UID. An instance without the managed mark is always left alone.
 */
export interface DeleteOptions extends CallOptions {
  /** The UID the caller expects in the mark (the Proxy's, or the one ListByTag returned). */
  readonly uid?: string | undefined;
  /** The installation the caller expects in the mark. */
  readonly installation?: string | undefined;
}

/** Options of `listByTag`. */
export interface ListOptions extends CallOptions {
  /** Whose instances to list; omitted means the default installation. */
  readonly installation?: string | undefined;
}

/** The shared Checker reasons. Providers add their own. */
export const Reason = {
  Reachable: 'Reachable',
  Timeout: 'Timeout',
  Unreachable: 'Unreachable',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  APIError: 'APIError',
} as const;

/** A shared reason, or a provider's own. */
export type Reason = (typeof Reason)[keyof typeof Reason] | (string & {});

/** One Checker answer for one target (host, node, project, API server). */
export interface TargetResult {
  /** The target's name (a host, a node, a project). */
  readonly target: string;
  /** Where the target is reached (a URL or host), for people. Never holds a secret. */
  readonly address: string;
  /** Whether the target can take work now. */
  readonly ready: boolean;
  /** Why: a shared {@link (Reason:variable)} or the provider's own. */
  readonly reason: Reason;
  /** What was found, for people. Never holds a secret. */
  readonly message: string;
  /** Facts gathered as far as the check got. Never a secret. */
  readonly details: Readonly<Record<string, string | number | boolean>>;
}

/** A backend health check. */
export interface Checker {
  /**
   * One result per target, in config order, checked concurrently. When the
   * signal fires, every target still running answers `Timeout` promptly.
   */
  check(opts?: CallOptions): Promise<TargetResult[]>;
}

/**
 * A provider: creates, reads, deletes and lists proxy instances on one
 * backend. Every method is safe to call concurrently and takes a signal.
 */
export interface Provider {
  /** The configured name (used in errors, logs and spans). */
  readonly name: string;
  /** The provider type (`proxmox`, `kvm2`, `local`, ...). */
  readonly type: string;
  /** Idempotent; resolves with the provider ID. Never rejects with NotFound. */
  create(req: CreateRequest, opts?: CallOptions): Promise<string>;
  /** Reads the instance back from the backend. Gone is NotFound. */
  get(id: string, opts?: CallOptions): Promise<Instance>;
  /**
   * Idempotent; deleting what is gone succeeds. An instance at the ID that
   * is not ours (no managed mark, or another owner than `opts` names) is
   * left alone and the call succeeds.
   */
  delete(id: string, opts?: DeleteOptions): Promise<void>;
  /** Every instance with this installation's managed mark. */
  listByTag(opts?: ListOptions): Promise<Instance[]>;
  /**
   * Replaces the password file of a running instance in place (§4.20): a
   * provider whose profile says `credentialRotation: 'in-place'` has it.
   * Resolves once the file is written where the proxy reads it; the proxy
   * itself picks it up within its credential TTL. Gone is NotFound.
   */
  updateAuth?(id: string, auth: ProxyAuth, opts?: CallOptions): Promise<void>;
  /** The health check, when the provider has one. */
  check?(opts?: CallOptions): Promise<TargetResult[]>;
  /** Releases connections and timers. Safe to call twice. */
  close?(): Promise<void>;
}
