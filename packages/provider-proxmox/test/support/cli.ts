// Test support: the `proxy-op` command (the operator package's bin, which runs
// its built dist/cli.js) over a temp workspace of Proxy manifests, with the
// Proxmox provider (test/fixtures/proxmox-for-operator.mjs) pointed at an
// HTTPS fake of PVE in this process, which can kill the command at any request.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { proxyOpCommand } from '@proxy-op/testkit';

/** The command as npm links it (the operator package's `bin`). */
export const CLI = proxyOpCommand(import.meta.url);
/** The provider as the command loads it: a providers-file `type` that is this path. */
export const PROVIDER = fileURLToPath(
  new URL('../fixtures/proxmox-for-operator.mjs', import.meta.url),
);

/** Where the command finds the PVE fake: its URL, its CA, and the token file. */
export interface FakeAccess {
  readonly url: string;
  readonly caFile: string;
  readonly tokenFile: string;
}

/** The `proxmox` block of a providers file for the fake: one node, template 9001, machine type `small`. */
export function proxmoxBlock(access: FakeAccess): Record<string, unknown> {
  return {
    url: access.url,
    tokenFile: access.tokenFile,
    caFile: access.caFile,
    nodes: ['pv1-1'],
    isoStorage: 'proxy-seeds',
    requestTimeoutSeconds: 10,
    templates: { 'debian-13': { vmid: 9001 } },
    machineTypes: { small: { cores: 1, memoryMiB: 1024 } },
  };
}

/** How a run of the command ended. */
export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/** A run of the command: its process, so it can be killed, and its end. */
export interface RunningCli {
  readonly child: ChildProcess;
  readonly exit: Promise<CliRun>;
}

/** The Proxy manifests, the providers file and the state file of one operator. */
export interface Workspace {
  readonly root: string;
  readonly dir: string;
  writeProxy(name: string, port: number): Promise<void>;
  removeProxy(name: string): Promise<void>;
  /** The state file: each Proxy's UID and status. */
  state(): Promise<{
    proxies: Record<
      string,
      { uid: string; status: { phase?: string; specHash?: string; providerID?: string } }
    >;
  }>;
  /** Runs `proxy-op run --standalone ... --once`; the caller may kill it. */
  run(env?: Record<string, string>): RunningCli;
  dispose(): Promise<void>;
}

/** A workspace whose providers file names one Proxmox provider, `pve`, at `url`. */
export async function workspace(
  opts: FakeAccess & { readonly pollMs: number },
): Promise<Workspace> {
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-pve-'));
  const dir = join(root, 'proxies');
  await mkdir(dir);
  const providers = join(root, 'providers.yaml');
  // JSON is YAML: the providers file the command reads.
  await writeFile(
    providers,
    // The double's VMs run no proxy: the data plane is not probed (Ready is the backend's Running).
    `${JSON.stringify({ installation: 'crash-test', providers: [{ name: 'pve', type: PROVIDER, probe: { enabled: false }, proxmox: proxmoxBlock(opts) }] }, null, 2)}\n`,
  );
  const args = [
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
    '50ms',
    '--backoff-max',
    '500ms',
    '--provisioning-poll',
    '200ms',
    '--deletion-poll',
    '50ms',
    '--output',
    'json',
    '--log-level',
    'info',
    '--once',
  ];
  return {
    root,
    dir,
    writeProxy: (name, port) =>
      writeFile(
        join(dir, `${name}.yaml`),
        `apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: ${name}\nspec:\n  provider: pve\n  port: ${port}\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n`,
      ),
    removeProxy: (name) => rm(join(dir, `${name}.yaml`)),
    state: async () => JSON.parse(await readFile(`${dir}.state.json`, 'utf8')),
    run: (env = {}) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        env: { ...process.env, PROXMOX_TEST_POLL_MS: String(opts.pollMs), ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      const timer = setTimeout(() => child.kill('SIGTERM'), 120_000);
      const exit = new Promise<CliRun>((resolve) =>
        child.on('close', (code, signal) => {
          clearTimeout(timer);
          resolve({ code, signal, stderr });
        }),
      );
      return { child, exit };
    },
    dispose: () => rm(root, { recursive: true, force: true }),
  };
}
