// Peer: the proxy program spawned as a child process (its command line and environment read from
// /proc, Linux), and the package's built module in a Node.js child process of its own, whose list
// of loaded Node.js modules it reports after real requests through it: what the footprint work
// relies on, held so that a change that undoes it fails here rather than in a benchmark.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/index.js';
import { NODE_FLAGS, PROGRAM_ENV } from '../src/proxy-server.js';
import {
  freePort,
  killAllSpawned,
  LOOPBACK_ORIGINS,
  startOrigin,
  startProgram,
  stopProgram,
  tunnel,
  viaProxy,
} from './support.js';

const ADDRESS = '127.0.4.40';
const linux = process.platform === 'linux';
if (!linux) console.log('footprint: the program checks read /proc, which only Linux has');

let origin: { server: Server; port: number };
let dir: string;
beforeAll(async () => {
  origin = await startOrigin();
  dir = await mkdtemp(join(tmpdir(), 'forward-proxy-footprint-'));
});
afterAll(async () => {
  origin?.server.close();
  await killAllSpawned();
  await rm(dir, { recursive: true, force: true });
});

const procList = (pid: number, file: 'cmdline' | 'environ') =>
  readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);

describe.runIf(linux)('the program runs with its Node.js flags and environment', () => {
  it('executes itself again with them, in the process its parent started', async () => {
    const p = await startProgram({ address: ADDRESS, port: await freePort(ADDRESS) });
    try {
      const args = procList(p.pid, 'cmdline');
      expect(args[0]).toBe(process.execPath);
      for (const flag of NODE_FLAGS) expect(args).toContain(flag);
      // Once each: the second run found them and did not execute itself a third time.
      expect(args.filter((a) => a === '--no-maglev')).toHaveLength(1);
      const env = procList(p.pid, 'environ');
      for (const [k, v] of Object.entries(PROGRAM_ENV)) expect(env).toContain(`${k}=${v}`);
      expect((await viaProxy(p, `http://127.0.0.1:${origin.port}/`)).status).toBe(200);
    } finally {
      await stopProgram(p);
    }
  });

  it('keeps an allocator setting its caller made', async () => {
    const p = await startProgram(
      { address: ADDRESS, port: await freePort(ADDRESS) },
      { MALLOC_ARENA_MAX: '4' },
    );
    try {
      const env = procList(p.pid, 'environ');
      expect(env).toContain('MALLOC_ARENA_MAX=4');
      expect(env).not.toContain('MALLOC_ARENA_MAX=1');
    } finally {
      await stopProgram(p);
    }
  });
});

// A proxy started from the built module the program runs (dist/proxy.js) in a child process;
// "report" on its stdin prints the Node.js modules it has loaded.
const CHILD = `
import { startForwardProxy } from ${JSON.stringify(fileURLToPath(new URL('../dist/proxy.js', import.meta.url)))};
const options = JSON.parse(process.argv[1]);
const proxy = await startForwardProxy(options);
process.stdout.write('ready\\n');
process.stdin.setEncoding('utf8').on('data', (d) => {
  if (d.includes('report')) process.stdout.write(JSON.stringify(process.moduleLoadList) + '\\n');
  if (d.includes('stop')) void proxy.close().then(() => process.exit(0));
});
`;

async function startChild(options: Record<string, unknown>): Promise<{
  child: ChildProcess;
  modules(): Promise<string[]>;
}> {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', CHILD, JSON.stringify(options)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let out = '';
  const waiters: ((line: string) => void)[] = [];
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      waiters.shift()?.(line);
    }
  });
  const nextLine = () => new Promise<string>((r) => waiters.push(r));
  expect(await nextLine()).toBe('ready');
  return {
    child,
    async modules() {
      const line = nextLine();
      child.stdin?.write('report\n');
      return JSON.parse(await line) as string[];
    },
  };
}

async function stopChild(c: { child: ChildProcess } | undefined): Promise<void> {
  if (c === undefined || c.child.exitCode !== null) return;
  const exited = new Promise((r) => c.child.once('exit', r));
  c.child.stdin?.write('stop\n');
  await exited;
}

// What loading each costs a proxy process is in the README's Footprint section.
const LEFT_OUT = [
  'NativeModule crypto',
  'NativeModule internal/fs/promises',
  'NativeModule internal/readline/interface',
  'NativeModule perf_hooks',
];

describe('what a proxy process loads', () => {
  it('a proxy without authentication, after requests and a tunnel, has loaded no crypto, fs/promises or perf_hooks', async () => {
    const port = await freePort(ADDRESS);
    const c = await startChild({
      name: 'footprint',
      address: ADDRESS,
      port,
      allowedSources: ['127.0.0.1/32'],
      accessLog: join(dir, 'a.log'),
      egress: LOOPBACK_ORIGINS,
    });
    try {
      const proxy = { address: ADDRESS, port };
      expect((await viaProxy(proxy, `http://127.0.0.1:${origin.port}/x`)).status).toBe(200);
      const t = await tunnel(proxy, `127.0.0.1:${origin.port}`);
      expect(t.status).toBe(200);
      t.socket.destroy();
      // An answer of the proxy's own (a refused target), which carries its Date field.
      expect((await viaProxy(proxy, 'http://127.0.0.1:1/')).status).toBe(502);
      const loaded = await c.modules();
      expect(loaded).toContain('NativeModule net');
      for (const m of LEFT_OUT) expect(loaded).not.toContain(m);
    } finally {
      await stopChild(c);
    }
    const log = readFileSync(join(dir, 'a.log'), 'utf8').trim().split('\n');
    expect(log).toHaveLength(3);
    for (const line of log) {
      const { time } = JSON.parse(line) as { time: string };
      expect(new Date(time).toISOString()).toBe(time);
    }
  });

  it('a proxy with authentication loads crypto when the first credential comes, not before', async () => {
    const port = await freePort(ADDRESS);
    const passwordFile = join(dir, 'passwords');
    const alice = { user: 'alice', password: 'wonder-land-1' };
    await writeFile(passwordFile, `alice:${hashPassword(alice.password)}\n`);
    const c = await startChild({
      name: 'footprint',
      address: ADDRESS,
      port,
      allowedSources: ['127.0.0.1/32'],
      auth: { realm: 'footprint', passwordFile },
      egress: LOOPBACK_ORIGINS,
    });
    try {
      expect(await c.modules()).not.toContain('NativeModule crypto');
      const answer = await viaProxy(
        { address: ADDRESS, port },
        `http://127.0.0.1:${origin.port}/`,
        {
          proxyAuthorization: basicAuthorization(alice),
        },
      );
      expect(answer.status).toBe(200);
      expect(await c.modules()).toContain('NativeModule crypto');
    } finally {
      await stopChild(c);
    }
  });
});
