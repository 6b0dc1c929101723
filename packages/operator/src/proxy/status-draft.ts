/**
 * The status one reconcile pass builds: a copy of the Proxy's status as
 * read, changed step by step, with its conditions stamped at the pass's
 * time and generation, and written only when it differs from what was read
 * (or at once, where the instance's ID must be on record).
 *
 * @module
 */

import { canonicalJson } from '../api/canonical-json.js';
import { setCondition } from '../api/conditions.js';
import type { ConditionType, ProxyObject, ProxyStatus } from '../api/proxy.js';
import type { ProxyStore } from '../store/proxies.js';

/** A Proxy status whose fields can be set. */
export type MutableStatus = { -readonly [K in keyof ProxyStatus]: ProxyStatus[K] };

/** The status of one pass over one Proxy. */
export class StatusDraft {
  /** The status being built. */
  readonly st: MutableStatus;
  readonly #before: ProxyStatus;
  readonly #store: ProxyStore;
  readonly #key: string;
  readonly #generation: number;
  readonly #now: Date;

  constructor(store: ProxyStore, key: string, obj: ProxyObject, now: Date) {
    this.#store = store;
    this.#key = key;
    this.#before = obj.status;
    this.#generation = obj.metadata.generation;
    this.#now = now;
    this.st = structuredClone(obj.status) as MutableStatus;
    this.st.observedGeneration = this.#generation;
  }

  /** Sets a condition; its `lastTransitionTime` moves only when its status does. */
  cond(
    type: ConditionType,
    status: 'True' | 'False' | 'Unknown',
    reason: string,
    message: string,
  ): void {
    this.st.conditions = setCondition(
      this.st.conditions,
      { type, status, reason, message, observedGeneration: this.#generation },
      this.#now,
    );
  }

  /** Writes the status when it differs from the one the pass read. */
  async write(): Promise<void> {
    if (canonicalJson(this.#before) === canonicalJson(this.st)) return;
    await this.#store.updateStatus(this.#key, { ...this.st });
  }

  /** Writes the status now, whatever the pass read (the instance's ID changed). */
  async save(): Promise<void> {
    await this.#store.updateStatus(this.#key, { ...this.st });
  }

  /** Forgets the instance: its ID, provider, hash, address, state, location, cost and probes. */
  clearInstance(): void {
    const st = this.st;
    delete st.providerID;
    delete st.instanceProvider;
    delete st.specHash;
    delete st.ip;
    delete st.endpoint;
    delete st.instanceState;
    delete st.location;
    delete st.cost;
    delete st.egressIP;
    delete st.probe;
  }
}
