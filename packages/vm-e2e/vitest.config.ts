import { defineConfig } from 'vitest/config';

// Each file boots real Debian guests under TCG: one file at a time keeps the machine's few cores
// for the guests. The bounds are wide on purpose (a loaded machine boots them several times
// slower); every wait inside a test has its own, shorter, deadline that says what it waited for.
export default defineConfig({
  test: {
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 1_200_000,
  },
});
