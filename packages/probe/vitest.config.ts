import { defineConfig } from 'vitest/config';

// The probe tests start real proxies (Squid, the forward proxy program) and send real traffic;
// one file at a time keeps the machine's few cores for the traffic under test.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
