// Test support (not a test file): the proxy program spawned as a child process, local origins,
// and raw-socket helpers. All traffic stays on 127.0.0.0/8.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestThroughProxy } from '@proxy-op/testkit';
import { probeHealth, proxyProgramPath } from '../src/seam.js';
import { spawnedPids } from './fixture.js';

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
}

/** Spawns `node dist/proxy-server.js --config <file>` and waits until it answers. */
export async function startProgram(config: {
  address: string;
  port: number;
  allowedSources?: readonly string[];
  limits?: Record<string, number>;
}): Promise<RunningProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'provider-local-proxy-'));
  const accessLog = join(dir, 'access.log');
  const file = join(dir, 'proxy.json');
  await writeFile(
    file,
    JSON.stringify({
      name: 'under-test',
      allowedSources: ['127.0.0.1/32'],
      accessLog,
      ...config,
    }),
  );
  const child = spawn(process.execPath, [proxyProgramPath(), '--config', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
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
  return { child, pid, address: config.address, port: config.port, dir, accessLog, exited };
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

/** A free TCP port on `address`. */
export function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createTcpServer();
    s.once('error', reject);
    s.listen({ host: address, port: 0 }, () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
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

/**
 * Polls `fn` until it is true or `ms` pass; resolves with the last answer. The deadline is a
 * safety net for a loaded machine, never a measure: what is awaited must happen by itself.
 */
export async function eventually(fn: () => boolean, ms = 30_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** An HTTP origin on 127.0.0.1 that echoes method, path, `via` and body as JSON. */
export async function startOrigin(): Promise<{ server: Server; port: number }> {
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => {
        const body = JSON.stringify({
          method: req.method,
          path: req.url,
          via: req.headers.via ?? null,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }, delay);
    });
  });
  const port = await listen(server);
  return { server, port };
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

/** Listens on 127.0.0.1 port 0; resolves with the port. */
export function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  return new Promise((resolve) => {
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = server.address();
      resolve(typeof a === 'object' && a !== null ? a.port : 0);
    });
  });
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

/** Opens a CONNECT tunnel through the proxy; resolves with the socket and the status line. */
export { openTunnel as tunnel } from '@proxy-op/testkit';

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

/** A request through the proxy (absolute URI); resolves with status and body. */
export function viaProxy(
  proxy: { address: string; port: number },
  url: string,
  opts: { method?: string; body?: string; localAddress?: string } = {},
): Promise<{ status: number; body: string }> {
  return requestThroughProxy(proxy, url, opts);
}

export { selfSignedCert } from '@proxy-op/testkit';
