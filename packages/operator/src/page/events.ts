/**
 * The Events the status page shows on a Proxy's detail: those this operator
 * recorded, kept in memory as it records them (no read from the API server,
 * whatever the number of viewers), the newest few per Proxy, and forgotten
 * with the Proxy.
 *
 * @module
 */
import { type EventType, hookStore, type ProxyStore } from '../store/proxies.js';
import type { PageEvent } from './wire.js';

/** Options of {@link EventLog}. */
export interface EventLogOptions {
  /** Events kept per Proxy. */
  readonly statusEventsPerProxy: number;
  /** Whether a Proxy still exists; the Events of one gone are dropped. */
  readonly exists?: ((key: string) => boolean) | undefined;
  /** The clock Events are stamped with. */
  readonly now?: (() => Date) | undefined;
}

/** How many new keys are taken between two sweeps of the keys of Proxies gone. */
const SWEEP_EVERY = 256;

/** The newest Events recorded on each Proxy, bounded in count per Proxy and in Proxies. */
export class EventLog {
  readonly #perProxy: number;
  readonly #exists: ((key: string) => boolean) | undefined;
  readonly #now: () => Date;
  readonly #events = new Map<string, PageEvent[]>();
  #newKeys = 0;

  constructor(opts: EventLogOptions) {
    this.#perProxy = opts.statusEventsPerProxy;
    this.#exists = opts.exists;
    this.#now = opts.now ?? (() => new Date());
  }

  /** Keeps an Event on the Proxy `key`, dropping its oldest past the bound. */
  record(key: string, type: EventType, reason: string, message: string): void {
    let list = this.#events.get(key);
    if (list === undefined) {
      list = [];
      this.#events.set(key, list);
      if (++this.#newKeys >= SWEEP_EVERY) this.#sweep();
    }
    list.push({ time: this.#now().toISOString(), type, reason, message });
    while (list.length > this.#perProxy) list.shift();
  }

  /** The Proxy's Events, oldest first. */
  recent(key: string): readonly PageEvent[] {
    return [...(this.#events.get(key) ?? [])];
  }

  /** Proxies with Events kept. */
  get size(): number {
    return this.#events.size;
  }

  /** Drops the Events of Proxies that are gone. */
  #sweep(): void {
    this.#newKeys = 0;
    if (this.#exists === undefined) return;
    for (const key of [...this.#events.keys()]) {
      if (!this.#exists(key)) this.#events.delete(key);
    }
  }

  /**
   * The store as the operator is to use it: the same store, with every
   * Event it records also kept here (a store that records none, such as the
   * standalone one, still has them on the page).
   */
  wrap(store: ProxyStore): ProxyStore {
    return hookStore(store, {
      recordEvent: (key, type, reason, message, record) => {
        this.record(key, type, reason, message);
        record(key, type, reason, message);
      },
    });
  }
}
