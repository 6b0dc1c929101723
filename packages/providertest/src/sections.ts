/**
 * The conformance list, one section per area of the contract. Each section
 * is exported on its own, with the options of the whole suite.
 *
 * @module
 */
export { describeAdoptionConformance } from './sections/adoption.js';
export { describeCancellationConformance } from './sections/cancellation.js';
export { describeCheckerConformance } from './sections/checker.js';
export { describeCreateConformance } from './sections/create.js';
export { describeCredentialsConformance } from './sections/credentials.js';
export { describeDeleteConformance } from './sections/delete.js';
export { describeErrorConformance } from './sections/errors.js';
export { describeGetConformance } from './sections/get.js';
export { describeListConformance } from './sections/list.js';
export { describeObservabilityConformance } from './sections/observability.js';
export { describeWhereConformance } from './sections/where.js';
