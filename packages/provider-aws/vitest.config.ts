import { defineConfig } from 'vitest/config';

// The aws CLI takes a second or more per command, more on a busy machine: one file at a time,
// generous limits.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The SDK is loaded before each file's tests, not inside a test's first call budget.
    setupFiles: ['test/support/warm-sdk.ts'],
  },
});
