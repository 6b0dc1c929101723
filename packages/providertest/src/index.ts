/**
 * The proxy-op provider conformance kit.
 *
 * @packageDocumentation
 */
export type { ConformanceTestApi } from './api.js';
export { abortable, createGate, type HarnessGate, plantedMarkPairs } from './gate.js';
export type {
  BackendHarness,
  CheckScenario,
  ClassifyCase,
  ConformanceFactory,
  ConformanceFixture,
  ForcedState,
  Gate,
  PlantedMark,
  ZoneConfiguration,
} from './harness.js';
export {
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
export { describeProviderConformance } from './suite.js';
export {
  type ConformanceOptions,
  type Counts,
  leakedIn,
  type TestContext,
} from './support.js';
export {
  type ConformanceDeps,
  createLogSink,
  createSpanRecorder,
  type LogLine,
  type LogSink,
  type SpanRecorder,
} from './telemetry.js';
