export { type PackedProject, packIntoProject } from './pack.js';
export { describeWithPeers, missingPeers, which } from './peer.js';
export {
  type ReadmeExample,
  type ReadmeFileBlock,
  readmeExamples,
  readmeFileBlocks,
  runReadmeExample,
} from './readme.js';
