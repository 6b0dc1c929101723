/**
 * The harness a provider author writes for the conformance suite: the
 * backend controls the sections drive (forced states, gates, planted
 * marks, classify cases, Checker scenarios) and the fixture and factory
 * that hand them over.
 *
 * @module
 */
import type {
  CreateRequest,
  ErrorClass,
  Operation,
  Placement,
  Provider,
  ProxyAuth,
  Reason,
} from '@proxy-op/contract';
import type { ConformanceDeps } from './telemetry.js';

/**
 * A backend state a harness can force, as the backend would report it:
 * `running` (with the IP it has, or none), `stopped` (exists, does not
 * run, no address), `unknown` (a state the provider has no mapping for; the
 * backend may still report the address the instance had).
 */
export type ForcedState = 'running' | 'stopped' | 'unknown';

/**
 * One configuration of the provider's zones (what `placement.zone` names:
 * zones, nodes, hosts) and what Create must do under it, for the
 * placement rules that depend on the configuration: a zone that may be
 * left out when only one is configured, and must be named when there are
 * several, say.
 */
export interface ZoneConfiguration {
  /** The zones the provider is configured with, in config order: one, or several. */
  readonly zones: readonly string[];
  /** Placements Create must accept under it: each makes an instance that Get and Delete then reach. */
  readonly accepted: readonly Placement[];
  /**
   * Placements Create must refuse under it as Permanent before any
   * backend call, each with the request field its message must name.
   */
  readonly refused: readonly { readonly placement: Placement; readonly field: string }[];
}

/** A way of blocking backend calls, released by the returned handle. */
export interface Gate {
  /** Resolves once a call is held at the gate. */
  readonly reached: Promise<void>;
  /** Lets the held call (and any later one) through. */
  release(): void;
}

/** One row of the provider's classify table. */
export interface ClassifyCase {
  /** What the row is: `"500 VM is locked"`, `"ECONNRESET"`. */
  readonly name: string;
  /** The operation the failure happened in. */
  readonly op: Operation;
  /** A realistic backend failure, as the provider's client would see it. */
  readonly error: unknown;
  /** The class `classify` must answer. */
  readonly want: ErrorClass;
}

/** A situation the Checker must name with a reason. */
export interface CheckScenario {
  /** What the situation is, for the test's name. */
  readonly name: string;
  /** Puts the backend into the situation (on a fresh provider and backend). */
  arrange(): Promise<void> | void;
  /** The reason every target (or `target`) must report. */
  readonly want: Reason;
  /** The target that must report `want`; every target when omitted. */
  readonly target?: string;
}

/** The owner written into a planted mark. */
export interface PlantedMark {
  /** The UID; may be empty. */
  readonly uid: string;
  /** The installation; omitted writes no installation key, as the Go original did. */
  readonly installation?: string | undefined;
}

/**
 * The controls over the backend that the suite drives. A provider author
 * writes one over their fake (or real test) backend; the reference
 * provider's (`createReferenceFixture`) is the model. Every control acts on
 * the backend directly, behind the provider's back, and never through the
 * provider. "Backend call" means one call of the provider's seam: one HTTP
 * request, one RPC, one file or process operation.
 */
export interface BackendHarness {
  /** A request this provider accepts (valid placement); the suite varies name, uid and cloud-init. */
  readonly baseRequest: Omit<CreateRequest, 'name' | 'uid' | 'cloudInit' | 'installation'>;
  /**
   * Placements `create` must refuse as Permanent before any backend call,
   * each with the field its message must name (`placement.zone`,
   * `placement.machineType`, ...: the request field, not the config key).
   */
  readonly invalidPlacements: readonly { readonly placement: Placement; readonly field: string }[];
  /**
   * Zone configurations to check placement under, besides the factory's
   * provider with `invalidPlacements`: with one zone and with several
   * where the rules differ. Each is built with `withZones`. Leave it out
   * for a provider with no choice of zone.
   */
  readonly zoneConfigurations?: readonly ZoneConfiguration[];
  /**
   * Builds the provider again, configured with only `zones`, over the same
   * backend and the way the factory built its own (the same name, logger,
   * tracer and credential). Required with `zoneConfigurations`.
   */
  withZones?(zones: readonly string[]): Promise<Provider>;
  /** How many backend calls the provider has made so far. */
  backendCalls(): number;
  /** How many instances exist in the backend now, marked or not. */
  instanceCount(): Promise<number>;
  /**
   * How many secondary resources exist now: seed ISOs, volumes, disks,
   * firewall rules, anything made beside an instance. Required when
   * `profile.secondaryResources` is not `none`.
   */
  secondaryCount?(): Promise<number>;
  /**
   * Makes the backend report the instance running: with `ip` as its
   * address (a later call with another IP changes it, as a DHCP renewal
   * would), or running with no address known yet when `ip` is undefined
   * (also after it had one: the lease lost, the address detached). Every
   * profile has that state: an address discovered after the start, one
   * assigned but not attached yet, a process not yet answering on its
   * own; the provider must read it as Provisioning.
   */
  setRunning(id: string, ip: string | undefined): Promise<void>;
  /** Forces a backend state; `unknown` is a state the provider does not know. */
  setState(id: string, state: ForcedState): Promise<void>;
  /** Changes the UID and creation time in the backend's copy of the mark. */
  rewriteMark(id: string, mark: { uid: string; createdAt: Date }): Promise<void>;
  /**
   * Replaces the instance at `id` by another with the same name (and, for
   * an allocated ID, at the same place) that carries `mark`, or no mark
   * at all when `mark` is undefined: what the provider finds when someone
   * else took the name or the ID after the provider made its instance.
   */
  replaceInstance(id: string, mark: PlantedMark | undefined): Promise<void>;
  /**
   * Holds the instance in a backend lock or asynchronous operation until
   * the returned function is called. Required when `profile.asyncOps` is
   * not empty.
   */
  holdLock?(id: string): Promise<() => Promise<void>>;
  /**
   * Makes the backend take the instance back, as a cloud takes back a spot
   * or preemptible instance: it stops serving and stays taken back (stopped,
   * or being deleted) for the provider to read until it is deleted.
   * Required when `profile.preemption` is `possible`.
   */
  preempt?(id: string): Promise<void>;
  /**
   * Makes the next `delete` of `id` stop half-way (the instance still
   * exists) until the gate is released.
   */
  holdNextDelete(id: string): Gate;
  /**
   * Creates an instance the way the provider would, marked, but never
   * starts it, and returns its ID. The provider must be able to read it
   * (no lock, no task left running): the suite checks.
   */
  plantNeverStarted(req: CreateRequest): Promise<string>;
  /** Plants a running instance named `name` without any ownership mark; returns its ID. */
  plantUnmarked(name: string): Promise<string>;
  /** Plants a running instance named `name` carrying `mark`; returns its ID. */
  plantMarked(name: string, mark: PlantedMark): Promise<string>;
  /**
   * Blocks backend calls after the first `skip` calls from now, until the
   * gate is released. A held call has reached the backend: when its caller
   * gives up, a real backend still carries it out, and a harness should
   * too once the gate opens. `skip: 0` blocks the very next call.
   */
  blockCalls(skip: number): Gate;
  /**
   * Makes the next backend call answer with something the provider cannot
   * read: `null` or `{}` where a list belongs, a 200 that is not JSON, a
   * field of the wrong type. The call after it answers normally.
   */
  injectMalformed(): void;
  /**
   * Makes the backend accept the next Create and then fail it, as a
   * cloud's asynchronous operation does (for lack of quota, say): the
   * instance never runs, and whatever the backend keeps of the failure is
   * what Get has to report. Required when `profile.createReturn` is
   * `submit`.
   */
  failNextCreateLater?(): Promise<void> | void;
  /**
   * Makes the backend refuse new instances for lack of capacity (quota,
   * space, addresses). Required when `profile.quota` is `detected`.
   */
  exhaustCapacity?(): Promise<void> | void;
  /**
   * Makes the part of the backend that holds `id` (its host, node or
   * zone) unreachable until the returned function is called. Required
   * when `profile.listPartial` is `omit-unreachable`.
   */
  isolatePart?(id: string): Promise<() => Promise<void>>;
  /**
   * The per-call budget the factory built the provider with, in ms: a
   * backend call that never answers must fail its operation (Transient)
   * within it. Required when `profile.timeouts` is `per-call`; keep it
   * short (a few hundred ms).
   */
  readonly callBudgetMs?: number | undefined;
  /** The classify table: realistic failures and their classes. */
  readonly classifyCases: readonly ClassifyCase[];
  /** The provider's classify function (the module's `classify`), for the table. */
  classify(op: Operation, err: unknown): ErrorClass;
  /** The Checker's targets, in config order. Required when the provider has `check`. */
  readonly checkTargets?: readonly string[];
  /** Makes one Checker target answer `ms` later than the others (so the order test can tell completion order from config order). */
  delayTarget?(target: string, ms: number): void;
  /** Situations and the reasons the Checker must give. Include a ready one (`Reachable`). */
  readonly checkScenarios?: readonly CheckScenario[];
  /** The credential's value; it must never appear in logs, spans or errors, in any encoding. */
  readonly credentialSentinel?: string | undefined;
  /** Makes the backend refuse the credential and echo it back in its answer (as a careless 401 body would). */
  rejectCredential?(): Promise<void> | void;
  /**
   * Rotates the credential to one the backend accepts, the way an admin
   * would (a new token file in the mounted Secret). Required when
   * `profile.credentials` is `mounted-files`: the same provider must then
   * work again without a restart.
   */
  rotateCredential?(): Promise<void> | void;
  /**
   * §4.20 `in-place` providers: whether the proxy of instance `id` accepts this
   * credential now — a request through the proxy where the harness can make one,
   * else the password file the proxy reads, checked against the credential.
   */
  acceptsCredential?(
    id: string,
    credential: { readonly username: string; readonly password: string },
  ): Promise<boolean>;
  /**
   * Where `acceptsCredential` sends its request through the proxy, as a
   * destination policy entry (`127.0.0.1:8080`): the kit allows it in the
   * `egress` of every Create of the credentials section, so a proxy that
   * holds the destination policy (which refuses the host it runs on and
   * private networks by default) reaches it. Leave it out when
   * `acceptsCredential` reads the password file instead of asking the proxy.
   */
  credentialOrigin?(): string | Promise<string>;
  /**
   * §4.20 `in-place` providers that leave Create's `auth` to the caller's
   * cloud-init (VM providers: the operator's default cloud-init writes the
   * password file): puts `auth`'s password file where instance `id`'s proxy
   * reads it, as that cloud-init would. The kit calls it after each Create
   * with `auth`, before it asks `acceptsCredential`.
   */
  deliverAuth?(id: string, auth: ProxyAuth): Promise<void>;
  /** Longest time after `updateAuth` resolves until the proxy takes the new file (ms, default 30000). */
  readonly authSettleMs?: number | undefined;
  /** Lets a `returns-early` provider's backend finish pending deletions (optional; the suite also polls). */
  settle?(): Promise<void>;
}

/** What the factory returns for each test. */
export interface ConformanceFixture {
  /**
   * The provider as users get it: built with `createProvider` from
   * `@proxy-op/contract` (the operation shell and `observe`), with the
   * logger and tracer the suite handed the factory.
   */
  readonly provider: Provider;
  /** The controls of the provider's backend (or its fake). */
  readonly harness: BackendHarness;
  /** Called after the test; release backend resources. */
  cleanup?(): Promise<void> | void;
}

/** Builds a fresh, isolated provider and backend for one test. */
export type ConformanceFactory = (deps: ConformanceDeps) => Promise<ConformanceFixture>;
