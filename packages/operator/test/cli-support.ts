// Test support: runs the built CLI in a child process over a temp workspace.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ProcessRun, runProcess } from '@proxy-op/testkit';

// The command as npm links it (package.json `bin`), which runs the built dist/cli.js.
const CLI = fileURLToPath(new URL('../bin/proxy-op.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/file-provider.mjs', import.meta.url));

/** What a finished CLI run gave. */
export type CliRun = ProcessRun;

/** Runs the CLI to its end. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
  cwd?: string,
): Promise<CliRun> {
  return runProcess(process.execPath, [CLI, ...args], {
    env,
    timeoutMs,
    ...(cwd === undefined ? {} : { cwd }),
  });
}

/** A running CLI whose JSON log lines can be waited for. */
export function spawnCli(args: string[], env: Record<string, string> = {}, cwd?: string) {
  const child: ChildProcess = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let buf = '';
  const waiters: Array<() => void> = [];
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i = buf.indexOf('\n');
    while (i >= 0) {
      try {
        logs.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>);
      } catch {
        // not a log line
      }
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
    }
    for (const w of waiters.splice(0)) w();
  });
  const out: Array<Record<string, unknown>> = [];
  let obuf = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    obuf += d;
    let i = obuf.indexOf('\n');
    while (i >= 0) {
      try {
        out.push(JSON.parse(obuf.slice(0, i)) as Record<string, unknown>);
      } catch {
        // not a JSON line
      }
      obuf = obuf.slice(i + 1);
      i = obuf.indexOf('\n');
    }
    for (const w of waiters.splice(0)) w();
  });
  const waitIn = async <T>(
    lines: Array<Record<string, unknown>>,
    pick: (l: Record<string, unknown>) => T | undefined,
    ms: number,
  ): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      for (const l of lines) {
        const v = pick(l);
        if (v !== undefined) return v;
      }
      if (Date.now() > end) throw new Error(`line not seen; got ${JSON.stringify(lines)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
  };
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('close', (code, signal) => r({ code, signal })),
  );
  return {
    exit,
    pid: child.pid,
    /** The JSON log lines so far. */
    logs,
    kill: (sig: NodeJS.Signals) => child.kill(sig),
    waitForLog: <T>(pick: (l: Record<string, unknown>) => T | undefined, ms = 60_000) =>
      waitIn(logs, pick, ms),
    waitForStdout: <T>(pick: (l: Record<string, unknown>) => T | undefined, ms = 60_000) =>
      waitIn(out, pick, ms),
  };
}

/** A temp folder with a providers file (a file-backed reference provider) and a manifests folder. */
export interface CliWorkspace {
  root: string;
  dir: string;
  providers: string;
  backendFile: string;
  writeProxy(name: string, port: number): Promise<void>;
  /** Rewrites the providers file with these provider names, all over the same backend file. */
  writeProviders(names: readonly string[]): Promise<void>;
  runArgs(extra: string[]): string[];
  dispose(): Promise<void>;
}

/** Creates a {@link CliWorkspace}. */
export async function cliWorkspace(): Promise<CliWorkspace> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-cli-'));
  const dir = join(root, 'proxies');
  await mkdir(dir);
  const providers = join(root, 'providers.yaml');
  const backendFile = join(root, 'backend.json');
  const writeProviders = (names: readonly string[]) =>
    writeFile(
      providers,
      `installation: test\nproviders:\n${names.map((n) => `  - name: ${n}\n    type: ${FIXTURE}\n    memory-file:\n      file: ${backendFile}\n`).join('')}`,
    );
  await writeProviders(['lab']);
  return {
    root,
    dir,
    providers,
    backendFile,
    writeProviders,
    writeProxy: (name, port) =>
      writeFile(
        join(dir, `${name}.yaml`),
        `apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: ${name}\nspec:\n  provider: lab\n  port: ${port}\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n`,
      ),
    runArgs: (extra) => [
      'run',
      '--standalone',
      dir,
      '--providers',
      providers,
      '--listen',
      'off',
      '--gc-interval',
      '0',
      '--health-interval',
      '0',
      '--backoff-base',
      '10ms',
      '--deletion-poll',
      '10ms',
      ...extra,
    ],
    dispose: () => rm(root, { recursive: true, force: true }),
  };
}
