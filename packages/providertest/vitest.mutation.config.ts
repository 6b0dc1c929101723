// The conformance suite over the reference provider, and the reference's own tests of what the
// suite leaves to each provider (test/reference-backend.test.ts: the zone a VM is placed in, the
// backend's refusals the provider never provokes): what `npm run mutation` measures the
// reference provider with. Stryker runs from the repository root, so the root is this package's
// folder (in Stryker's sandbox, its copy).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: { include: ['test/reference.test.ts', 'test/reference-backend.test.ts'] },
});
