// Test support (not a test file): the proxy program spawned as a child process, local origins,
// and raw-socket helpers. All traffic stays on 127.0.0.0/8.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen, SpawnedPrograms } from '@proxy-op/testkit';
import { probeHealth } from '../src/health.js';
import { proxyServerPath } from '../src/proxy-server.js';

export {
  eventually,
  freePort,
  listen,
  openTunnel as tunnel,
  requestThroughProxy as viaProxy,
  startHttpEchoOrigin as startOrigin,
} from '@proxy-op/testkit';

const spawned = new SpawnedPrograms(proxyServerPath());

/**
 * The destination policy of the test proxies: every port of the loopback origins the tests
 * start (the defaults refuse loopback, and CONNECT to anything but 443). The proxy's own
 * address and port stay refused whatever this says.
 */
export const LOOPBACK_ORIGINS = Object.freeze({
  allow: ['127.0.0.0/8:1-65535', '[::1]:1-65535'],
});

/** Every pid {@link startProgram} spawned, so a suite's afterAll can make sure they are gone. */
export const spawnedPids = spawned.pids;

/** Kills every process {@link startProgram} spawned (SIGKILL) and waits until they are gone. */
export function killAllSpawned(): Promise<void> {
  return spawned.killAll();
}

/** A proxy program running as a child process. */
export interface RunningProxy {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly address: string;
  readonly port: number;
  readonly dir: string;
  readonly accessLog: string;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** What it wrote to stderr so far. */
  stderr(): string;
}

/**
 * Spawns `node bin/proxy-server.js --config <file>` and waits until it
 * answers; `env` is added to this process's environment.
 */
export async function startProgram(
  config: {
    address: string;
    port: number;
    allowedSources?: readonly string[];
    limits?: Record<string, number>;
    outgoingAddress?: string;
    auth?: { realm: string; passwordFile: string; credentialsTtlMs?: number };
    parents?: Record<string, unknown>;
    healthSources?: readonly string[];
    /** The destination policy; {@link LOOPBACK_ORIGINS} when unset. */
    egress?: Record<string, unknown>;
  },
  env: Readonly<Record<string, string>> = {},
): Promise<RunningProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'forward-proxy-program-'));
  const accessLog = join(dir, 'access.log');
  const file = join(dir, 'proxy.json');
  await writeFile(
    file,
    JSON.stringify({
      name: 'under-test',
      allowedSources: ['127.0.0.1/32'],
      accessLog,
      egress: LOOPBACK_ORIGINS,
      ...config,
    }),
  );
  const child = spawn(process.execPath, [proxyServerPath(), '--config', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const pid = child.pid as number;
  spawnedPids.add(pid);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const deadline = Date.now() + 30_000; // a safety net: a loaded machine starts Node.js slowly
  while (!(await probeHealth('under-test', config.address, config.port, 2_000))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`the proxy program did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    child,
    pid,
    address: config.address,
    port: config.port,
    dir,
    accessLog,
    exited,
    stderr: () => stderr,
  };
}

/** Stops a program started by {@link startProgram}, waits for it, and removes its folder. */
export async function stopProgram(p: RunningProxy | undefined): Promise<void> {
  if (p === undefined) return;
  if (p.child.exitCode === null && p.child.signalCode === null) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
  await rm(p.dir, { recursive: true, force: true });
}

/** The number of open file descriptors of a process (Linux). */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Resident memory of a process in kB (Linux). */
export function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** A TCP echo server on 127.0.0.1; half-closes its side when the client does. */
export async function startEcho(): Promise<{
  server: ReturnType<typeof createTcpServer>;
  port: number;
}> {
  const server = createTcpServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  const port = await listen(server);
  return { server, port };
}

/** Sends raw bytes to `address:port` and collects everything until the peer closes. */
export function rawExchange(
  address: string,
  port: number,
  data: string | Buffer,
  opts: { localAddress?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: address, port, localAddress: opts.localAddress });
    let out = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      out += d;
    });
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET') resolve(`${out}<reset>`);
      else reject(err);
    });
    s.on('close', () => resolve(out));
    s.setTimeout(opts.timeoutMs ?? 15_000, () => s.destroy(new Error(`no close; got ${out}`)));
    s.write(data);
  });
}

/**
 * A CONNECT tunnel on a raw socket that allows half-open connections (the
 * http client's sockets end themselves when the peer does).
 */
export function rawTunnel(
  proxy: { address: string; port: number },
  target: string,
): Promise<{ status: number; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: proxy.address, port: proxy.port, allowHalfOpen: true });
    let buf = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve({ status: Number(buf.subarray(9, 12).toString()), socket });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}
