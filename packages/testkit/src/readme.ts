import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join } from 'node:path';
import { runProcess } from './process.js';

/** One runnable example taken from a README. */
export interface ReadmeExample {
  /** The heading the example stands under, for test names. */
  readonly heading: string;
  /** The TypeScript source of the code block. */
  readonly source: string;
  /**
   * The lines the example says it prints: every `// → text` comment in the
   * block, in order.
   */
  readonly expected: readonly string[];
}

const FENCE = /^```(ts|typescript)\s+example\s*$/;

/**
 * Extracts the code blocks fenced as ```` ```ts example ```` from a README.
 * Other blocks are documentation only and are not run.
 */
export async function readmeExamples(readmePath: string): Promise<ReadmeExample[]> {
  return parseReadmeExamples(await readFile(readmePath, 'utf8'));
}

/** {@link readmeExamples} over README text. */
export function parseReadmeExamples(text: string): ReadmeExample[] {
  const lines = text.split(/\r?\n/);
  const out: ReadmeExample[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('#')) heading = line.replace(/^#+\s*/, '');
    if (!FENCE.test(line)) continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] ?? '');
    const source = body.join('\n');
    const expected = [...source.matchAll(/\/\/ → (.*)$/gm)].map((m) => (m[1] ?? '').trimEnd());
    out.push({ heading, source, expected });
  }
  return out;
}

/** A README code block that quotes a file of the package: ```` ```ts file=path ````. */
export interface ReadmeFileBlock {
  readonly path: string;
  readonly source: string;
}

/**
 * The blocks fenced as ```` ```ts file=path ````: each must equal that file
 * (a test checks it), so the README shows code that another test runs.
 */
export async function readmeFileBlocks(readmePath: string): Promise<ReadmeFileBlock[]> {
  return parseReadmeFileBlocks(await readFile(readmePath, 'utf8'));
}

/** {@link readmeFileBlocks} over README text. */
export function parseReadmeFileBlocks(text: string): ReadmeFileBlock[] {
  const lines = text.split(/\r?\n/);
  const out: ReadmeFileBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^```\w+\s+file=(\S+)\s*$/.exec(lines[i] ?? '');
    if (m === null) continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] ?? '');
    out.push({ path: m[1] ?? '', source: `${body.join('\n')}\n` });
  }
  return out;
}

/**
 * Runs one README example as a user would: its TypeScript is stripped of
 * types and written next to the package (so bare imports of the package
 * resolve through the workspace), then run with the current Node. Resolves
 * with what it printed; rejects when it exits non-zero.
 */
export async function runReadmeExample(
  packageDir: string,
  example: ReadmeExample,
  opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string }> {
  const dir = await mkdtemp(join(packageDir, '.readme-example-'));
  const file = join(dir, 'example.mjs');
  try {
    await writeFile(file, stripTypeScriptTypes(example.source, { mode: 'strip' }));
    const run = await runProcess(process.execPath, [file], {
      cwd: dirname(file),
      timeoutMs: opts.timeoutMs ?? 30_000,
      ...(opts.env === undefined ? {} : { env: opts.env }),
    });
    if (run.code !== 0) {
      throw new Error(
        `example exited with ${run.signal ?? run.code}:\n${run.stderr}\n${run.stdout}`,
      );
    }
    return { stdout: run.stdout, stderr: run.stderr };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
