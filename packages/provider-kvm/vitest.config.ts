import { defineConfig } from 'vitest/config';

// The real-stack suite starts libvirtd, sshd and QEMU guests: one file at a time keeps the
// machine's few cores for the guests under test.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 300_000,
  },
});
