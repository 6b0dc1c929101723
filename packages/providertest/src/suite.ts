/**
 * The whole conformance suite: every section registered for a provider,
 * chosen by its profile.
 *
 * @module
 */
import { profileProblems } from '@proxy-op/contract';
import {
  describeAdoptionConformance,
  describeCancellationConformance,
  describeCheckerConformance,
  describeCreateConformance,
  describeCredentialsConformance,
  describeDeleteConformance,
  describeErrorConformance,
  describeGetConformance,
  describeListConformance,
  describeObservabilityConformance,
  describeWhereConformance,
} from './sections.js';
import type { ConformanceOptions } from './support.js';

/**
 * Registers the whole conformance list (contract §11) as tests of the given
 * runner. Tests that do not apply to the provider's profile are not
 * registered. Each test builds a fresh provider and backend with `factory`.
 */
export function describeProviderConformance(opts: ConformanceOptions): void {
  if (opts === null || typeof opts !== 'object')
    throw new TypeError('describeProviderConformance: options required');
  if (typeof opts.factory !== 'function')
    throw new TypeError('describeProviderConformance: factory must be a function');
  if (typeof opts.vitest?.describe !== 'function' || typeof opts.vitest.it !== 'function') {
    throw new TypeError(
      'describeProviderConformance: vitest must be the vitest module (describe, it, expect)',
    );
  }
  const problems = profileProblems(opts.profile);
  if (problems.length > 0)
    throw new TypeError(`describeProviderConformance: ${problems.join('; ')}`);
  opts.vitest.describe('provider conformance (contract §11)', () => {
    describeCreateConformance(opts);
    describeGetConformance(opts);
    describeDeleteConformance(opts);
    describeListConformance(opts);
    describeAdoptionConformance(opts);
    describeCancellationConformance(opts);
    describeErrorConformance(opts);
    describeCheckerConformance(opts);
    describeObservabilityConformance(opts);
    describeCredentialsConformance(opts);
    describeWhereConformance(opts);
  });
}
