export { type PackedProject, packIntoProject } from './pack.js';
export { describeWithPeers, missingPeers, which } from './peer.js';
export { type ReadmeExample, readmeExamples, runReadmeExample } from './readme.js';
