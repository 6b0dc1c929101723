// Test support: the `proxy-op` command run standalone inside the stack's network namespace, its
// JSON lines, and the state file it keeps beside the manifests folder.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { NetworkNamespace } from '@proxy-op/libvirt-harness';

const require = createRequire(import.meta.url);
/** The command as npm links it (the operator package's `bin`). */
export const CLI = join(
  dirname(require.resolve('@proxy-op/operator/package.json')),
  'bin/proxy-op.js',
);

/** A Proxy's status as the state file keeps it (the fields these tests read). */
export interface ProxyStatus {
  readonly phase?: string;
  readonly providerID?: string;
  readonly ip?: string;
  readonly endpoint?: string;
  readonly egressIP?: string;
  readonly instanceState?: string;
  readonly specHash?: string;
  readonly lastError?: { class: string; message: string };
}

/** A running operator. */
export interface RunningOperator {
  /** The JSON lines it printed on stdout (one per status change). */
  readonly lines: ReadonlyArray<Record<string, unknown>>;
  /** Everything it logged (JSON lines on stderr), as text. */
  log(): string;
  /** The status of `default/<name>` in the state file, or undefined while it has none. */
  status(name: string): Promise<ProxyStatus | undefined>;
  /** Whether the state file still holds `default/<name>`. */
  has(name: string): Promise<boolean>;
  /** SIGTERM, then SIGKILL after 30 s; resolves once it exited. */
  stop(): Promise<void>;
}

/**
 * Starts `proxy-op run --standalone <dir> --providers <file>` in `netns`
 * with JSON output and no metrics listener; `extra` flags are appended.
 */
export function startOperator(
  netns: Pick<NetworkNamespace, 'spawn'>,
  dir: string,
  providersFile: string,
  extra: readonly string[] = [],
): RunningOperator {
  const child: ChildProcess = netns.spawn(
    process.execPath,
    [
      CLI,
      'run',
      '--standalone',
      dir,
      '--providers',
      providersFile,
      '--listen',
      'off',
      '--output',
      'json',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
  );
  const lines: Array<Record<string, unknown>> = [];
  let log = '';
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
      try {
        lines.push(JSON.parse(out.slice(0, i)) as Record<string, unknown>);
      } catch {
        // not a JSON line
      }
      out = out.slice(i + 1);
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    log += d;
  });
  const exited = once(child, 'exit');
  const stateFile = `${dir}.state.json`;
  type State = { proxies?: Record<string, { status?: ProxyStatus }> };
  const state = async (): Promise<State> =>
    JSON.parse(await readFile(stateFile, 'utf8').catch(() => '{}')) as State;
  return {
    lines,
    log: () => log,
    status: async (name) => (await state()).proxies?.[`default/${name}`]?.status,
    has: async (name) => `default/${name}` in ((await state()).proxies ?? {}),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
