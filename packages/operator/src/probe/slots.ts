/**
 * When probes run: per key, one slot (idle, waiting or running, so never
 * two probes of one Proxy at once), a first-come queue of keys waiting for
 * one of `concurrency` places, and, after each run, a timer for the next
 * one an interval later, spread by jitter so Proxies that became Running
 * together drift apart.
 *
 * @module
 */

/**
 * A key's slot: `idle`, `queued`, `running`; `forgotten` while a probe of a
 * key removed meanwhile still runs, `again` when the key came back
 * meanwhile (probed once the running probe is over, never beside it).
 */
type Slot = 'idle' | 'queued' | 'running' | 'forgotten' | 'again';

/** What {@link ProbeSlots} is built with. */
export interface ProbeSlotsOptions {
  readonly probeConcurrency: number;
  readonly probeIntervalMs: number;
  /** A fraction of the interval, spread both ways. */
  readonly probeJitter: number;
  readonly random: () => number;
  /** Runs one probe of `key`; the next is scheduled when it settles. */
  readonly run: (key: string) => Promise<void>;
}

/** The slots, the queue and the timers of the probes. */
export class ProbeSlots {
  readonly #opts: ProbeSlotsOptions;
  readonly #slots = new Map<string, Slot>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #waiting: string[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #peak = 0;
  #stopped = false;

  constructor(opts: ProbeSlotsOptions) {
    if (!(opts.probeIntervalMs > 0) || !(opts.probeConcurrency >= 1)) {
      throw new RangeError('ProbeSlots: need probeIntervalMs > 0 and probeConcurrency >= 1');
    }
    this.#opts = opts;
  }

  /** Probes in flight now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Keys waiting for a place. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The most probes in flight at once so far. */
  get peak(): number {
    return this.#peak;
  }

  /** Queues `key` for a probe now (nothing when one of it waits or runs), registering it when new. */
  now(key: string): void {
    if (this.#stopped) return;
    const slot = this.#slots.get(key) ?? 'idle';
    if (slot === 'forgotten') this.#slots.set(key, 'again');
    if (slot !== 'idle') return;
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    this.#slots.set(key, 'queued');
    this.#waiting.push(key);
    this.#pump();
  }

  /**
   * Forgets `key`: no further probe of it. One running finishes, and only a
   * {@link now} of the key after this is probed, once it is over.
   */
  remove(key: string): void {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    const slot = this.#slots.get(key);
    if (slot === 'running' || slot === 'again') this.#slots.set(key, 'forgotten');
    else this.#slots.delete(key);
  }

  #pump(): void {
    while (this.#inFlight.size < this.#opts.probeConcurrency && this.#waiting.length > 0) {
      const key = this.#waiting.shift() as string;
      if (this.#slots.get(key) !== 'queued') continue;
      this.#slots.set(key, 'running');
      const run = this.#opts
        .run(key)
        .catch(() => {})
        .finally(() => {
          this.#inFlight.delete(run);
          const slot = this.#slots.get(key);
          if (slot === 'running') {
            this.#slots.set(key, 'idle');
            this.#later(key);
          } else if (slot === 'again') {
            this.#slots.set(key, 'idle');
            this.now(key);
          } else if (slot === 'forgotten') this.#slots.delete(key);
          this.#pump();
        });
      this.#inFlight.add(run);
      this.#peak = Math.max(this.#peak, this.#inFlight.size);
    }
  }

  #later(key: string): void {
    if (this.#stopped) return;
    const { probeIntervalMs, probeJitter, random } = this.#opts;
    const t = setTimeout(
      () => this.now(key),
      Math.round(probeIntervalMs * (1 + probeJitter * (random() * 2 - 1))),
    );
    t.unref?.();
    this.#timers.set(key, t);
  }

  /** Stops every timer and the queue; resolves once the probes in flight have settled. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#waiting.length = 0;
    await Promise.allSettled([...this.#inFlight]);
  }
}
