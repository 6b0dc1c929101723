/**
 * The proxy's monotonic clock, in milliseconds. `performance.now()` would
 * do, but the global `performance` is Node.js's `perf_hooks`, loaded at its
 * first use with eight modules more (about 0.6 MiB in every proxy process);
 * `process.hrtime` is there from the start.
 *
 * @module
 */

/** Milliseconds on a monotonic clock (from an arbitrary start: only differences mean anything). */
export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
