/**
 * Building blocks for harnesses: a gate that holds backend calls until
 * released, a wait that gives up when a signal fires, and the mark of a
 * planted instance.
 *
 * @module
 */
import { abortable, formatMarkTime, MarkKey } from '@proxy-op/contract';
import type { Gate, PlantedMark } from './harness.js';

/** A {@link Gate} with the side a harness's backend uses. */
export interface HarnessGate extends Gate {
  /** Resolves once `release()` is called. */
  readonly released: Promise<void>;
  /** Marks the gate reached (resolves `reached`). */
  reach(): void;
  /** Marks the gate reached, then waits for `release()`, or rejects with the signal's reason. */
  hold(signal?: AbortSignal): Promise<void>;
}

/** Makes a {@link HarnessGate}: what `blockCalls` and `holdNextDelete` return. */
export function createGate(): HarnessGate {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => {
    reach = r;
  });
  const released = new Promise<void>((r) => {
    release = r;
  });
  return {
    reached,
    released,
    reach,
    release,
    hold(signal) {
      reach();
      return abortable(released, signal);
    },
  };
}

/**
 * Waits for `p`, or rejects with the signal's own reason as soon as it
 * fires: the contract's `abortable`, here too for harness authors.
 */
export { abortable };

/**
 * The ownership mark of a planted instance as key/value pairs (labels,
 * metadata), the way providers write it: managed, the UID, a creation time
 * (an hour ago unless given) and the installation, whose key is left out
 * when `mark.installation` is omitted, as the Go original wrote marks.
 */
export function plantedMarkPairs(
  mark: PlantedMark,
  createdAt: Date = new Date(Date.now() - 3_600_000),
): Record<string, string> {
  const pairs: Record<string, string> = {
    [MarkKey.Managed]: 'true',
    [MarkKey.Uid]: mark.uid,
    [MarkKey.CreatedAt]: formatMarkTime(createdAt),
  };
  if (mark.installation !== undefined) pairs[MarkKey.Installation] = mark.installation;
  return pairs;
}
