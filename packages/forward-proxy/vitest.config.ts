import { defineConfig } from 'vitest/config';

// The proxy tests start real proxy processes and send real traffic; one file at a time keeps
// the machine's few cores for the traffic under test.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
