// Mutation testing of the reference provider by the conformance suite and the reference's own
// tests (vitest.mutation.config.ts): `npm run mutation`. A report, not a test: it is not part of
// `npm test`.
//
// Stryker runs from the repository root (the script changes there) and mutates copies in its
// sandbox, never the working tree. The sandbox holds the repository's layout, cut down to what
// the kit's tests load: this package, the tsconfig base its tsconfig extends and the tsconfig of
// each package its project references lead to; node_modules is the repository's, symlinked, so
// the workspace packages resolve to their built output (`npx tsc -b` first).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'packages/providertest/vitest.mutation.config.ts' },
  mutate: [
    'packages/providertest/src/reference/provider.ts',
    'packages/providertest/src/reference/backend.ts',
  ],
  ignorePatterns: [
    '/*',
    '!/package.json',
    '!/tsconfig.base.json',
    '!/packages',
    '/packages/*/*',
    '!/packages/*/tsconfig.json',
    '!/packages/providertest/*',
    '/packages/providertest/dist',
    '/packages/providertest/node_modules',
    '/packages/providertest/reports',
  ],
  // Stryker rewrites tsconfig files with an API TypeScript 7 no longer has; there is nothing
  // to rewrite here (vitest transpiles the sources), so point it at a file that does not exist.
  tsconfigFile: 'tsconfig.stryker-none.json',
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20000,
  reporters: ['clear-text', 'json'],
  clearTextReporter: { allowEmojis: false, logTests: false, reportMutants: false },
  jsonReporter: { fileName: 'packages/providertest/reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
