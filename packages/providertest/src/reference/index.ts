/**
 * The reference provider: an in-memory backend behind the full contract, the
 * model for provider authors and the kit's own check that every conformance
 * test can pass.
 *
 * @packageDocumentation
 */
export {
  BackendError,
  MemoryBackend,
  type MemorySeam,
  type VmRecord,
  type VmSpec,
} from './backend.js';
export {
  createReferenceFixture,
  MEMORY_CREDENTIAL_SENTINEL,
  type ReferenceFixtureOptions,
} from './fixture.js';
export { configSchema, profile, providerModule } from './module.js';
export {
  classify,
  MEMORY_REGION,
  type MemoryConfig,
  type MemoryId,
  MemoryImplementation,
  type MemoryProviderDeps,
  mapMemoryState,
  memoryId,
  seedVolume,
} from './provider.js';
