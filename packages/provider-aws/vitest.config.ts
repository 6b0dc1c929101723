import { defineConfig } from 'vitest/config';

// The aws CLI takes a second or more per command, more on a busy machine: one file at a time,
// generous limits.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
