import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { profileTableProblems } from './profile-table.js';
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
 * that file. With `profile` (a provider's exported profile) and `axes` (the
 * contract's `PROFILE_AXES`), the README's profile table must also say what
 * the profile does ({@link profileTableProblems}).
 */
export function describeReadme(
  t: Api,
  packageDir: string,
  opts: {
    timeoutMs?: number;
    profile?: {
      readonly choices: object;
      readonly axes: readonly string[];
    };
  } = {},
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
    const profile = opts.profile;
    if (profile !== undefined) {
      t.it('has a profile table row for every axis, starting with the exported choice', () => {
        t.expect(profileTableProblems(readme, profile.choices, profile.axes)).toEqual([]);
      });
    }
    for (const block of quoted) {
      t.it(`quotes ${block.path} as it is`, () => {
        t.expect(block.source).toBe(readFileSync(join(packageDir, block.path), 'utf8'));
      });
    }
  });
}
