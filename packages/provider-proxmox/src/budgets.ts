/**
 * Every wait the provider makes, in one object that tests shrink.
 *
 * @module
 */

/** The budgets of the provider's waits, in milliseconds. */
export interface Budgets {
  /** The clone task, and the wait for a VM's lock in the ownership check. */
  readonly clone: number;
  /** The seed upload task. */
  readonly upload: number;
  /** The disk resize task. */
  readonly resize: number;
  /** The start task. */
  readonly start: number;
  /** The stop task. */
  readonly stop: number;
  /** The destroy task. */
  readonly destroy: number;
  /** The seed delete task. */
  readonly seedDelete: number;
  /** The wait for `running` after the start task. */
  readonly running: number;
  /** A program run in the guest by updateAuth (`cp`, `mv`), until it exits. */
  readonly guestExec: number;
  /** The interval between task and status polls. */
  readonly poll: number;
}

/** The production budgets. */
export const DEFAULT_BUDGETS: Budgets = Object.freeze({
  clone: 10 * 60_000,
  upload: 2 * 60_000,
  resize: 2 * 60_000,
  start: 2 * 60_000,
  stop: 2 * 60_000,
  destroy: 5 * 60_000,
  seedDelete: 60_000,
  running: 60_000,
  guestExec: 60_000,
  poll: 1_000,
});
