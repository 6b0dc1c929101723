/**
 * What the request handlers need from the server: its store, type registry
 * and engine, the tokens it knows, and the fault and counter state tests
 * drive.
 *
 * @module
 */
import type { Engine } from '../engine/engine.js';
import type { FaultState, RequestCounters } from '../faults.js';
import type { User } from '../rbac.js';
import type { Registry } from '../registry.js';
import type { Store } from '../store.js';
import type { OpenWatch } from './handlers/watch.js';

/** What the request handler needs from the server. */
export interface ServerContext {
  readonly store: Store;
  readonly registry: Registry;
  readonly engine: Engine;
  readonly tokens: ReadonlyMap<string, User>;
  readonly version: { major: string; minor: string; gitVersion: string };
  readonly serverAddress: () => string;
  readonly openWatches: Set<OpenWatch>;
  readonly bookmarkIntervalMs: number;
  readonly faults: FaultState;
  readonly counters: RequestCounters;
}
