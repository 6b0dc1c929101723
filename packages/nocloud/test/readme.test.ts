// Peer: the built package, run from a child Node process as a user would.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { readmeExamples, readmeFileBlocks, runReadmeExample } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const examples = await readmeExamples(`${pkgDir}/README.md`);
const quoted = await readmeFileBlocks(`${pkgDir}/README.md`);

describe('README examples', () => {
  it('has at least one runnable example', () => {
    expect(examples.length).toBeGreaterThan(0);
  });
  for (const ex of examples) {
    it(`runs: ${ex.heading}`, async () => {
      const { stdout } = await runReadmeExample(pkgDir, ex);
      expect(stdout.trimEnd().split('\n')).toEqual(ex.expected);
    });
  }
  for (const block of quoted) {
    it(`quotes ${block.path} as it is`, async () => {
      expect(block.source).toBe(await readFile(`${pkgDir}/${block.path}`, 'utf8'));
    });
  }
});
