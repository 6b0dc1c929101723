/**
 * Work the operator runs every so often in the background (GC passes,
 * health rounds): one run of a task at a time, a failed run logged and the
 * next one kept, and a stop that waits for the runs under way.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { messageOf } from './message.js';

/** Periodic tasks and the runs of them under way. */
export class Periodic {
  readonly #log: Logger;
  readonly #timers: Array<ReturnType<typeof setInterval>> = [];
  readonly #tasks = new Set<Promise<unknown>>();

  constructor(logger: Logger) {
    this.#log = logger;
  }

  /** Runs `fn` every `ms`; a run still going when the next is due makes that one skip. */
  every(ms: number, fn: () => Promise<unknown>): void {
    let busy = false;
    const t = setInterval(() => {
      if (busy) return;
      busy = true;
      fn()
        .catch((err: unknown) => this.#log.error({ err: messageOf(err) }, 'periodic task failed'))
        .finally(() => {
          busy = false;
        });
    }, ms);
    t.unref?.();
    this.#timers.push(t);
  }

  /** Keeps `p` among the runs {@link Periodic.stop} waits for until it settles. */
  track<T>(p: Promise<T>): Promise<T> {
    this.#tasks.add(p);
    const forget = () => this.#tasks.delete(p);
    p.then(forget, forget);
    return p;
  }

  /** Runs `p` in the background: tracked, a failure logged. */
  background(p: Promise<unknown>): void {
    this.track(p).catch((err: unknown) =>
      this.#log.error({ err: messageOf(err) }, 'background task failed'),
    );
  }

  /** Starts no run any more. */
  cancel(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers.length = 0;
  }

  /** Resolves once no run is under way. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#tasks]);
  }
}
