import { defineConfig } from 'vitest/config';

// The real-daemon suites each start their own libvirtd, and the QEMU driver
// allows one daemon at a time, so test files run one after another.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
