// Mutation testing of the reference provider by the conformance suite alone:
// `npm run mutation`. A report, not a test: it is not part of `npm test`.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['src/reference/provider.ts', 'src/reference/backend.ts'],
  // Stryker rewrites tsconfig files with an API TypeScript 7 no longer has; there is nothing
  // to rewrite here (vitest transpiles the sources), so point it at a file that does not exist.
  tsconfigFile: 'tsconfig.stryker-none.json',
  // The sandbox would copy only this folder, without the repository's tsconfig.base.json.
  inPlace: true,
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20000,
  reporters: ['clear-text', 'json'],
  clearTextReporter: { allowEmojis: false, logTests: false, reportMutants: false },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
