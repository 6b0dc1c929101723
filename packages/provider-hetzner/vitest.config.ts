import { defineConfig } from 'vitest/config';

// The hcloud CLI takes a second or more per command (it polls actions every 500 ms), more on a
// busy machine: generous limits, and one file at a time.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
