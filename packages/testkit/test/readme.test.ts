// Peer: none (files in a temp dir and a child Node process).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readmeExamples, runReadmeExample } from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'testkit-readme-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readmeExamples', () => {
  it('takes only blocks fenced as ts example, with their expected output', async () => {
    const readme = join(dir, 'README.md');
    await writeFile(
      readme,
      [
        '# Title',
        '## Usage',
        '```ts example',
        'const n: number = 2;',
        'console.log(n * 21); // → 42',
        '```',
        '```ts',
        'notRun();',
        '```',
      ].join('\n'),
    );
    const examples = await readmeExamples(readme);
    expect(examples).toHaveLength(1);
    expect(examples[0]?.heading).toBe('Usage');
    expect(examples[0]?.expected).toEqual(['42']);
    const { stdout } = await runReadmeExample(dir, examples[0]!);
    expect(stdout.trim()).toBe('42');
  });

  it('rejects when the example fails', async () => {
    await expect(
      runReadmeExample(dir, { heading: 'x', source: 'process.exit(3);', expected: [] }),
    ).rejects.toThrow(/exited with 3/);
  });
});
