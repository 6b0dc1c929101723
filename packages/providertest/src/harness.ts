import type {
  CreateRequest,
  ErrorClass,
  Operation,
  Placement,
  Provider,
  Reason,
} from '@proxy-op/contract';
import type { ConformanceDeps } from './telemetry.js';

/** A backend state a harness can force, as the backend would report it. */
export type ForcedState = 'running' | 'stopped' | 'unknown';

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
  readonly op: Operation;
  /** A realistic backend failure, as the provider's client would see it. */
  readonly error: unknown;
  readonly want: ErrorClass;
}

/** A situation the Checker must name with a reason. */
export interface CheckScenario {
  readonly name: string;
  /** Puts the backend into the situation (on a fresh provider and backend). */
  arrange(): Promise<void> | void;
  /** The reason every target (or `target`) must report. */
  readonly want: Reason;
  /** The target that must report `want`; every target when omitted. */
  readonly target?: string;
}

/**
 * The controls over the backend that the suite drives. A provider author
 * writes one over their fake (or real test) backend; the reference
 * provider's is the model.
 */
export interface BackendHarness {
  /** A request this provider accepts (valid placement); the suite varies name, uid and cloud-init. */
  readonly baseRequest: Omit<CreateRequest, 'name' | 'uid' | 'cloudInit' | 'installation'>;
  /** Placements `create` must refuse as Permanent before any backend call, each with the field its message must name. */
  readonly invalidPlacements: readonly { readonly placement: Placement; readonly field: string }[];
  /** How many backend calls the provider has made so far (every seam call). */
  backendCalls(): number;
  /** How many instances exist in the backend now, marked or not. */
  instanceCount(): Promise<number>;
  /** Makes the backend report the instance running, with or without an IP. */
  setRunning(id: string, ip: string | undefined): Promise<void>;
  /** Forces a backend state; `unknown` is a state the provider does not know. */
  setState(id: string, state: ForcedState): Promise<void>;
  /** Changes the UID and creation time in the backend's copy of the mark, behind the provider's back. */
  rewriteMark(id: string, mark: { uid: string; createdAt: Date }): Promise<void>;
  /**
   * Holds the instance in a backend lock or asynchronous operation until
   * the returned function is called. Required when `profile.asyncOps` is
   * not empty.
   */
  holdLock?(id: string): Promise<() => Promise<void>>;
  /**
   * Makes the next `delete` of `id` stop half-way (the instance still
   * exists) until the gate is released.
   */
  holdNextDelete(id: string): Gate;
  /** Creates an instance the way the provider would, marked, but never starts it. Returns its ID. */
  plantNeverStarted(req: CreateRequest): Promise<string>;
  /** Plants an instance with `name` that carries no ownership mark. */
  plantUnmarked(name: string): Promise<void>;
  /** Plants an instance with `name` carrying a mark for `uid` (may be empty) and `installation` (omitted: no installation key, as the Go original wrote). */
  plantMarked(
    name: string,
    mark: { uid: string; installation?: string | undefined },
  ): Promise<void>;
  /**
   * Blocks backend calls after the first `skip` calls from now, until the
   * gate is released. `skip: 0` blocks the very next call.
   */
  blockCalls(skip: number): Gate;
  /** The classify table: realistic failures and their classes. */
  readonly classifyCases: readonly ClassifyCase[];
  /** The provider's classify function, for the table. */
  classify(op: Operation, err: unknown): ErrorClass;
  /** The Checker's targets, in config order. Required when the provider has `check`. */
  readonly checkTargets?: readonly string[];
  /** Makes one Checker target answer `ms` later than the others (so the order test can tell completion order from config order). */
  delayTarget?(target: string, ms: number): void;
  /** Situations and the reasons the Checker must give. Include a ready one (`Reachable`). */
  readonly checkScenarios?: readonly CheckScenario[];
  /** The credential's value; it must never appear in logs, spans or errors. */
  readonly credentialSentinel?: string | undefined;
  /** Makes the backend refuse the credential and echo it back in its answer (as a careless 401 body would). */
  rejectCredential?(): Promise<void> | void;
  /** Lets a `returns-early` provider's backend finish pending deletions (optional; the suite also polls). */
  settle?(): Promise<void>;
}

/** What the factory returns for each test. */
export interface ConformanceFixture {
  /** The provider as users get it: built and wrapped with `observe` (use `createProvider`). */
  readonly provider: Provider;
  readonly harness: BackendHarness;
  /** Called after the test; release backend resources. */
  cleanup?(): Promise<void> | void;
}

/** Builds a fresh, isolated provider and backend for one test. */
export type ConformanceFactory = (deps: ConformanceDeps) => Promise<ConformanceFixture>;
