export {
  consoleLogger,
  durationFromEnv,
  type LogFn,
  type TestLogger,
  teeLogger,
} from './logging.js';
export { type PackedProject, packIntoProject } from './pack.js';
export { describeWithPeers, missingPeers, which } from './peer.js';
export { type ProcessRun, runProcess } from './process.js';
export { openTunnel, requestThroughProxy } from './proxy-client.js';
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
export { type SshKeyPair, sshKeyPair } from './ssh-key.js';
export { selfSignedCert } from './tls.js';
