import type { ExpectStatic } from 'vitest';

/**
 * The part of the test runner the suite uses. Pass vitest itself:
 * `import * as vitest from 'vitest'`.
 */
export interface ConformanceTestApi {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: () => Promise<void>, timeout?: number): void;
  readonly expect: ExpectStatic;
}
