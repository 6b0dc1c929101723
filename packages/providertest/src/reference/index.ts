/**
 * The reference provider: an in-memory backend behind the full contract, the
 * model for provider authors and the kit's own check that every conformance
 * test can pass (and, with a flaw, fail).
 *
 * @packageDocumentation
 */
export { BackendError, MemoryBackend, type MemorySeam, type VmRecord } from './backend.js';
export { createReferenceFixture, MEMORY_CREDENTIAL_SENTINEL } from './fixture.js';
export { FLAWS, type Flaw } from './flaws.js';
export { memoryConfigSchema, memoryProfile, memoryProviderModule } from './module.js';
export {
  classifyMemory,
  type MemoryConfig,
  MemoryProvider,
  type MemoryProviderDeps,
  mapMemoryState,
  memoryId,
} from './provider.js';
