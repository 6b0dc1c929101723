export { type PackedProject, packIntoProject } from './pack.js';
export { type ReadmeExample, readmeExamples, runReadmeExample } from './readme.js';
