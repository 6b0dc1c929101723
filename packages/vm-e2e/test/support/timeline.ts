// Test support: the moments a boot passes through, each recorded when first seen by polling,
// and printed as the timings of the run.

/** One thing to watch for: its name, and a check that holds once it happened. */
export interface Milestone {
  readonly name: string;
  readonly check: () => Promise<boolean>;
}

/** First-seen times of milestones, counted from a start. */
export class Timeline {
  readonly #title: string;
  readonly #start: number;
  readonly #seen = new Map<string, number>();

  constructor(title: string, start = Date.now()) {
    this.#title = title;
    this.#start = start;
  }

  /** Milliseconds from the start to `name`, or undefined while it has not happened. */
  at(name: string): number | undefined {
    const t = this.#seen.get(name);
    return t === undefined ? undefined : t - this.#start;
  }

  /**
   * Polls every unseen milestone every `everyMs` until all have happened,
   * recording when each first held. Throws, naming those still unseen, after
   * `timeoutMs`: a bound that catches a boot that never gets there, not a
   * speed claim.
   */
  async watch(milestones: readonly Milestone[], timeoutMs: number, everyMs = 500): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const m of milestones) {
        if (this.#seen.has(m.name)) continue;
        if (await m.check().catch(() => false)) this.#seen.set(m.name, Date.now());
      }
      const missing = milestones.filter((m) => !this.#seen.has(m.name)).map((m) => m.name);
      if (missing.length === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `${this.#title}: not seen within ${timeoutMs / 1000} s: ${missing.join(', ')}\n${this.report()}`,
        );
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  /** The milestones seen so far, in order, each with its time from the start and from the one before. */
  report(): string {
    const seen = [...this.#seen.entries()].sort((a, b) => a[1] - b[1]);
    const width = Math.max(0, ...seen.map(([n]) => n.length));
    let before = this.#start;
    const rows = seen.map(([name, t]) => {
      const row = `  ${name.padEnd(width)}  ${((t - this.#start) / 1000).toFixed(1).padStart(6)} s  (+${((t - before) / 1000).toFixed(1)} s)`;
      before = t;
      return row;
    });
    return [`${this.#title}:`, ...rows].join('\n');
  }
}
