import { defineConfig } from 'vitest/config';

// The SDK takes seconds to load on a busy machine: one file at a time, generous timeouts.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
