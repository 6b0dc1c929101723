// A transport wrapper for the real-stack suites: counts every dial and
// libvirt call and can hold the k-th one, like the model's blockCalls. A held
// call has reached the daemon: once released it is carried out there even
// if its caller gave up, as a real in-flight call would be.
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import {
  type DialTarget,
  type LibvirtConnection,
  type LibvirtSeam,
  SEAM_METHODS,
  type Transport,
} from '../../src/seam.js';
import { abortable } from './model.js';

export class StepTransport implements Transport {
  /** Dials and calls so far. */
  calls = 0;
  /** What each call was, in order (`dial` or the seam method). */
  readonly log: string[] = [];
  #hold: { at: number; gate: HarnessGate } | undefined;

  constructor(readonly inner: Transport) {}

  /** Holds the call `skip` calls from now until the gate is released. */
  holdAt(skip: number): HarnessGate {
    const gate = createGate();
    this.#hold = { at: this.calls + skip, gate };
    void gate.released.then(() => {
      if (this.#hold?.gate === gate) this.#hold = undefined;
    });
    return gate;
  }

  #take(what: string): HarnessGate | undefined {
    const n = this.calls++;
    this.log.push(what);
    const h = this.#hold;
    return h !== undefined && h.at === n ? h.gate : undefined;
  }

  async open(target: DialTarget, signal: AbortSignal): Promise<LibvirtConnection> {
    const gate = this.#take('dial');
    if (gate !== undefined) await gate.hold(signal);
    const conn = await this.inner.open(target, signal);
    return {
      ...conn,
      seam: this.#wrap(conn.seam),
      isOpen: () => conn.isOpen(),
      close: () => conn.close(),
    };
  }

  #wrap(seam: LibvirtSeam): LibvirtSeam {
    const out: Record<string, unknown> = {};
    for (const m of SEAM_METHODS) {
      const fn = (seam[m] as (a: unknown, s: AbortSignal) => Promise<unknown>).bind(seam);
      out[m] = (args: unknown, signal: AbortSignal) => {
        const gate = this.#take(m);
        if (gate === undefined) return fn(args, signal);
        const effect = (async () => {
          await gate.hold();
          // The daemon carries the call out whatever became of its caller.
          return fn(args, AbortSignal.timeout(30_000));
        })();
        return abortable(effect, signal, () =>
          Object.assign(new Error(`${m}: aborted`), { code: 'ERR_RPC_ABORTED' }),
        );
      };
    }
    return out as unknown as LibvirtSeam;
  }
}
