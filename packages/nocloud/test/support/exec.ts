// Runs a reader as a user would: a child process, its output as bytes.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Ran {
  readonly stdout: Buffer;
  readonly stderr: string;
}

/** Runs `cmd` with `args`; rejects with its stderr when it exits non-zero. */
export function run(cmd: string, args: readonly string[], input?: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      [...args],
      { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) {
          reject(
            new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr.toString()}`),
          );
        } else {
          resolve({ stdout, stderr: stderr.toString() });
        }
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** A temp dir removed by the returned function. */
export async function tempDir(
  prefix: string,
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Writes `iso` to `name` in `dir` and returns the path. */
export async function writeIso(dir: string, name: string, iso: Uint8Array): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, iso);
  return file;
}
