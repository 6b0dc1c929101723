import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseReadmeExamples, parseReadmeFileBlocks, runReadmeExample } from './readme.js';

interface Api {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: () => Promise<void> | void, timeout?: number): void;
  expect: (
    actual: unknown,
    message?: string,
  ) => {
    toBe(expected: unknown): void;
    toEqual(expected: unknown): void;
    toBeGreaterThan(n: number): void;
  };
}

/**
 * Registers a package's README tests: there is at least one runnable
 * example; each ```` ```ts example ```` block runs with Node and prints
 * exactly its `// → text` lines; each ```` ```ts file=path ```` block equals
 * that file.
 */
export function describeReadme(
  t: Api,
  packageDir: string,
  opts: { timeoutMs?: number } = {},
): void {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const examples = parseReadmeExamples(readme);
  const quoted = parseReadmeFileBlocks(readme);
  t.describe('README', () => {
    t.it('has at least one runnable example', () => {
      t.expect(examples.length).toBeGreaterThan(0);
    });
    for (const ex of examples) {
      t.it(
        `runs the example under "${ex.heading}"`,
        async () => {
          const { stdout } = await runReadmeExample(packageDir, ex, opts);
          t.expect(stdout.trimEnd().split('\n'), 'printed lines').toEqual(ex.expected);
        },
        opts.timeoutMs ?? 30_000,
      );
    }
    for (const block of quoted) {
      t.it(`quotes ${block.path} as it is`, () => {
        t.expect(block.source).toBe(readFileSync(join(packageDir, block.path), 'utf8'));
      });
    }
  });
}
