import { defineConfig } from 'vitest/config';

// The SDK takes seconds to load, and gcloud seconds per command, more on a busy machine: one
// file at a time, generous limits (each file warms the SDK in a hook, test/support/sdk.ts).
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});
