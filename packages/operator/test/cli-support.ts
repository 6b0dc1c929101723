// Test support: runs the built CLI in a child process over a temp workspace.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type JsonLinesProcess,
  type ProcessRun,
  runProcess,
  spawnJsonLines,
} from '@proxy-op/testkit';

/** The command as npm links it (package.json `bin`), which runs main() of the built dist/cli/main.js. */
export const CLI = fileURLToPath(new URL('../bin/proxy-op.js', import.meta.url));
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
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
): JsonLinesProcess {
  return spawnJsonLines(process.execPath, [CLI, ...args], { env, cwd });
}

/** `proxy-op run --standalone DIR --providers FILE` with no metrics listener, logging JSON lines. */
export function spawnStandalone(dir: string, providers: string): JsonLinesProcess {
  return spawnCli([
    'run',
    '--standalone',
    dir,
    '--providers',
    providers,
    '--listen',
    'off',
    '--output',
    'json',
  ]);
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
      // The reference provider's instances have no data plane to probe.
      `installation: test\nproviders:\n${names.map((n) => `  - name: ${n}\n    type: ${FIXTURE}\n    probe: { enabled: false }\n    memory-file:\n      file: ${backendFile}\n`).join('')}`,
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

/** A GET through a proxy, with the upstream the answer names. */
export function requestViaGateway(
  proxy: { address: string; port: number },
  url: string,
  authorization?: string | undefined,
): Promise<{ status: number; upstream: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      path: url,
      agent: false,
      headers: authorization === undefined ? {} : { 'proxy-authorization': authorization },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          upstream: res.headers['x-proxy-op-upstream'] as string | undefined,
          body,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
