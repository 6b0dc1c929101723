import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** A throwaway project outside the repo with packed packages installed. */
export interface PackedProject {
  /** The project's folder, in the system temp dir. */
  readonly dir: string;
  /** The tarballs `npm pack` wrote, by package name. */
  readonly tarballs: ReadonlyMap<string, string>;
  /** Runs a command in the project; rejects on a non-zero exit. */
  run(
    command: string,
    args: readonly string[],
    opts?: { timeoutMs?: number; env?: NodeJS.ProcessEnv },
  ): Promise<{ stdout: string; stderr: string }>;
  /** Removes the project and the tarballs. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Packs each package folder with `npm pack` and installs the tarballs into a
 * new project in the temp dir, as a user outside the repo would: only what
 * the tarballs hold is there, and their dependencies come from the registry
 * (or npm's cache). `dependencies` adds registry packages to the project.
 */
export async function packIntoProject(opts: {
  packageDirs: readonly string[];
  dependencies?: Readonly<Record<string, string>>;
  files?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}): Promise<PackedProject> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-pack-'));
  const dir = join(root, 'project');
  const timeout = opts.timeoutMs ?? 240_000;
  try {
    const tarballs = new Map<string, string>();
    for (const pkgDir of opts.packageDirs) {
      const abs = resolve(pkgDir);
      const manifest = JSON.parse(await readFile(join(abs, 'package.json'), 'utf8')) as {
        name: string;
      };
      const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', root], {
        cwd: abs,
        timeout,
      });
      const [info] = JSON.parse(stdout) as [{ filename: string }];
      tarballs.set(manifest.name, join(root, info.filename));
    }
    const deps: Record<string, string> = { ...opts.dependencies };
    for (const [name, file] of tarballs) deps[name] = `file:${file}`;
    await exec('mkdir', ['-p', dir]);
    await writeFile(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: 'outside-project', private: true, type: 'module', dependencies: deps }, null, 2)}\n`,
    );
    for (const [name, text] of Object.entries(opts.files ?? {})) {
      await exec('mkdir', ['-p', join(dir, name, '..')]);
      await writeFile(join(dir, name), text);
    }
    await exec(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: dir, timeout },
    );
    const dispose = () => rm(root, { recursive: true, force: true });
    return {
      dir,
      tarballs,
      run: (command, args, runOpts = {}) =>
        exec(command, [...args], {
          cwd: dir,
          timeout: runOpts.timeoutMs ?? timeout,
          env: { ...process.env, ...runOpts.env },
          maxBuffer: 16 * 1024 * 1024,
        }),
      dispose,
      [Symbol.asyncDispose]: dispose,
    };
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
}
