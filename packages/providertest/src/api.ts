/**
 * The part of the test runner the conformance suite uses (vitest itself
 * fits).
 *
 * @module
 */
import type { ExpectStatic } from 'vitest';

/**
 * The part of the test runner the suite uses. Pass vitest itself:
 * `import * as vitest from 'vitest'`.
 */
export interface ConformanceTestApi {
  /** Declares a group of tests (vitest's `describe`). */
  describe(name: string, fn: () => void): void;
  /** Declares one test with an optional timeout in ms (vitest's `it`). */
  it(name: string, fn: () => Promise<void>, timeout?: number): void;
  /** vitest's `expect`. */
  readonly expect: ExpectStatic;
}
