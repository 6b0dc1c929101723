export {
  GuestAgentFailure,
  GuestAgentModel,
  type GuestFile,
} from './guest-agent.js';
export {
  type JsonLine,
  type JsonLinesProcess,
  type SpawnJsonLinesOptions,
  spawnJsonLines,
} from './json-lines.js';
export {
  consoleLogger,
  durationFromEnv,
  type LogFn,
  type TestLogger,
  teeLogger,
} from './logging.js';
export { eventually, freePort, listen, startHttpEchoOrigin } from './loopback.js';
export {
  type AttributeValue,
  decodeTraceExport,
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from './otlp.js';
export { type PackedProject, packIntoProject } from './pack.js';
export { describeWithPeers, missingPeers, which } from './peer.js';
export { type ProcessRun, runProcess } from './process.js';
export { profileCellStart, profileTableProblems } from './profile-table.js';
export {
  type AuthMatrixSetup,
  AWKWARD_PASSWORDS,
  authMatrix,
  basicAuthorization,
  type Credential,
  type CredentialLoop,
  type CurlAnswer,
  type CurlRequest,
  curlThroughProxy,
  expectedAuthMatrix,
  type LoopCounts,
  NCSA_HELPER,
  nextSecond,
  type ProxyAddress,
  type RotationReport,
  replaceFile,
  rotateUnderLoad,
  startCredentialLoop,
  statusWith,
} from './proxy-auth.js';
export { getOverTunnel, openTunnel, requestThroughProxy } from './proxy-client.js';
export {
  parseReadmeExamples,
  parseReadmeFileBlocks,
  type ReadmeExample,
  type ReadmeFileBlock,
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from './readme.js';
export { describeReadme } from './readme-suite.js';
export {
  type ProviderTraceExpectation,
  type ProviderTraceReport,
  providerTraceReport,
  SpanTree,
  type TracedCall,
  type TracedOperation,
} from './span-tree.js';
export { SpawnedPrograms } from './spawned.js';
export { NOBODY, type RunningSquid, startSquid } from './squid.js';
export { type SshKeyPair, sshKeyPair } from './ssh-key.js';
export {
  CLOUD_INIT_SENTINEL,
  type LifecycleTrace,
  lifecycleTrace,
  proxyOpCommand,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  type StandaloneLifecycle,
  type StandaloneLifecycleOptions,
} from './standalone.js';
export { selfSignedCert } from './tls.js';
