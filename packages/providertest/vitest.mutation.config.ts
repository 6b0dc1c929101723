// The conformance suite over the reference provider, and nothing else: what `npm run mutation`
// measures the reference provider with.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['test/reference.test.ts'] },
});
