/**
 * Every wait the engine makes, in one object that tests shrink.
 *
 * @module
 */

/** The budgets of the engine's waits, in milliseconds. */
export interface Budgets {
  /** One dial: the key files, TCP, the SSH handshake, the channel and the libvirt handshake. */
  readonly dial: number;
  /** One libvirt call, reply included. */
  readonly call: number;
  /**
   * One domain start (`domainCreate`): libvirt launches QEMU and waits for
   * its monitor, itself for up to 30 s, so a start takes longer than other
   * calls on a loaded host.
   */
  readonly start: number;
  /** One image: the download streamed into its volume upload, from the request to the last byte. */
  readonly image: number;
  /** The wait for a started domain to report running (profile `createReturn: blocking`). */
  readonly running: number;
  /** The interval between state polls while waiting for running. */
  readonly poll: number;
}

/** The production budgets. */
export const DEFAULT_BUDGETS: Budgets = Object.freeze({
  dial: 20_000,
  call: 30_000,
  start: 120_000,
  image: 30 * 60_000,
  running: 15_000,
  poll: 500,
});
