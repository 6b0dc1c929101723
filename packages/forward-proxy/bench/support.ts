// What the benchmarks share (not a benchmark): the origin in a process of its own, Squid and
// the proxy program started in temp dirs, and the client's loads and measures. Everything stays
// on 127.0.0.0/8; the proxies listen on 127.0.210.0/24, which no test suite uses, so the smoke
// run can run beside them.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * BENCH_SMOKE=1: the smoke run CI makes, one short round of every measure with a small tunnel,
 * only to show each benchmark runs and measures; never figures to quote.
 */
export const SMOKE = process.env.BENCH_SMOKE === '1';
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMOKE ? 1 : 3));
export const SECONDS = Number(process.env.BENCH_SECONDS ?? (SMOKE ? 0.5 : 3));
export const TUNNEL_BYTES = (SMOKE ? 1 : 16) * 1024 * 1024;
/** What a tunnel row says it moves: `16 MiB each` (1 MiB in the smoke run). */
export const TUNNEL_LABEL = `${TUNNEL_BYTES / 1024 / 1024} MiB each`;
/** How long a warm-up or a settling pause lasts, in ms (shorter in the smoke run). */
export const WARM_MS = SMOKE ? 100 : 1_000;

/** Says on stderr which part starts, so a stall names where it is. */
export function part(name: string): void {
  process.stderr.write(`bench: ${name}…\n`);
}

/**
 * A peer that is not installed: says why on stderr and leaves it out of the table, except under
 * CI=true, where .ci/apt-packages installs every peer, so a missing one fails the run.
 */
export function missingPeer(name: string, install: string): void {
  const why = `${name} was not found, so its column is left out. Install it to compare: ${install}`;
  if (process.env.CI === 'true') throw new Error(`${why} (.ci/apt-packages installs it)`);
  process.stderr.write(`bench: ${why}\n`);
}

// ---- the origin: an HTTP server and a TCP byte source, in a process of their own ----------

const ORIGIN = `
import { createServer } from 'node:http';
import { createServer as tcp } from 'node:net';
const BIG = Buffer.alloc(1024 * 1024, 0x62);
const CHUNK = Buffer.alloc(64 * 1024, 0x63);
const http = createServer((req, res) => {
  if (req.url === '/big') {
    res.writeHead(200, { 'content-length': BIG.length });
    res.end(BIG);
  } else {
    res.writeHead(200, { 'content-length': 2 });
    res.end('ok');
  }
});
const source = tcp((s) => {
  s.on('error', () => {});
  let left = ${TUNNEL_BYTES};
  const pump = () => {
    while (left > 0) {
      left -= CHUNK.length;
      if (!s.write(CHUNK)) return void s.once('drain', pump);
    }
    s.end();
  };
  pump();
});
await new Promise((r) => http.listen({ host: '127.0.0.1', port: 0 }, r));
await new Promise((r) => source.listen({ host: '127.0.0.1', port: 0 }, r));
process.stdout.write(JSON.stringify({ http: http.address().port, source: source.address().port }) + '\\n');
`;

export function startOrigin(): Promise<{ child: ChildProcess; http: number; source: number }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', ORIGIN], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0)
        resolve({ child, ...(JSON.parse(out.slice(0, nl)) as { http: number; source: number }) });
    });
    child.once('exit', (code) => reject(new Error(`the origin exited with ${code}`)));
  });
}

// ---- Squid ----------------------------------------------------------------------------------

export function findSquid(): string | undefined {
  const named = process.env.SQUID;
  if (named !== undefined && named !== '') return named;
  for (const dir of (process.env.PATH ?? '').split(':').concat('/usr/sbin', '/usr/local/sbin')) {
    try {
      if (readdirSync(dir).includes('squid')) return join(dir, 'squid');
    } catch {
      // not a readable folder
    }
  }
  return undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface Squid {
  readonly child: ChildProcess;
  readonly port: number;
  readonly version: string;
  readonly user: string;
  stop(): Promise<void>;
}

export async function startSquid(binary: string, extra: readonly string[] = []): Promise<Squid> {
  const dir = mkdtempSync(join(tmpdir(), 'forward-proxy-bench-squid-'));
  const port = await freePort();
  // Shared-memory segments are named after the service name: one of our own per run.
  const service = `proxyopbench${process.pid}`;
  const conf = [
    `http_port 127.0.0.1:${port}`,
    'acl proxy_op_allowed src 127.0.0.0/8',
    'http_access allow proxy_op_allowed',
    'http_access deny all',
    'cache deny all',
    'cache_mem 0 MB',
    `access_log stdio:${join(dir, 'access.log')}`,
    `cache_log ${join(dir, 'cache.log')}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'pinger_enable off',
    'dns_nameservers 127.0.0.1',
    'visible_hostname localhost',
    'shutdown_lifetime 1 seconds',
    ...extra,
  ].join('\n');
  writeFileSync(join(dir, 'squid.conf'), `${conf}\n`);
  // Squid never serves as root: as root, it runs as nobody in a folder nobody owns.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, 65534, 65534);
  const child = spawn(binary, ['-N', '-n', service, '-f', join(dir, 'squid.conf')], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    for (const f of readdirSync('/dev/shm').filter((n) => n.startsWith(`${service}-`))) {
      rmSync(join('/dev/shm', f), { force: true });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (await answers(port)) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`squid did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const version = /Version (\S+)/.exec(execFileSync(binary, ['-v'], { encoding: 'utf8' }))?.[1];
  return {
    child,
    port,
    version: version ?? '?',
    user: asRoot ? 'nobody' : 'the current user',
    stop,
  };
}

export function answers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

// ---- the proxy program: this build, and another one to compare a change with -----------------

export async function startProgram(
  program: string,
  name: string,
  host: string,
  extra: Record<string, unknown> = {},
): Promise<{ child: ChildProcess; host: string; port: number; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), `forward-proxy-bench-${name}-`));
  const port = await freePort();
  const config = join(dir, 'proxy.json');
  writeFileSync(
    config,
    JSON.stringify({
      name,
      address: host,
      port,
      allowedSources: ['127.0.0.0/8'],
      accessLog: join(dir, 'access.log'),
      ...extra,
    }),
  );
  const child = spawn(process.execPath, [program, '--config', config], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await answers(port, host))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${program} did not start`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, host, port, stop };
}

// ---- the client ---------------------------------------------------------------------------

export interface Column {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** The process whose memory is sampled; none for direct. */
  readonly pid?: number | undefined;
  /** The request target for an origin path (absolute through a proxy). */
  path(p: string): string;
  /** True when CONNECT is spoken to reach the source. */
  readonly tunnels: boolean;
}

export function get(agent: Agent, c: Column, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: c.host, port: c.port, path: c.path(p) }, (res) => {
      let n = 0;
      res.on('data', (d: Buffer) => {
        n += d.length;
      });
      res.on('end', () =>
        res.statusCode === 200 ? resolve(n) : reject(new Error(`${c.name}: ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** CPU time (user and system) of a process so far, in ms (Linux counts it in 10 ms ticks). */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function rssKb(pid: number | undefined, field = 'VmRSS'): number {
  if (pid === undefined) return 0;
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** Runs `concurrency` loops of `one` for SECONDS; returns the count, bytes, seconds and peak RSS. */
export async function load(
  c: Column,
  concurrency: number,
  one: (agent: Agent) => Promise<number>,
): Promise<{
  count: number;
  bytes: number;
  seconds: number;
  rssPeakKb: number;
  anonPeakKb: number;
  cpuMs: number;
}> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let count = 0;
  let bytes = 0;
  let rssPeakKb = rssKb(c.pid);
  let anonPeakKb = rssKb(c.pid, 'RssAnon');
  const cpu0 = cpuMs(c.pid);
  const sampler = setInterval(() => {
    rssPeakKb = Math.max(rssPeakKb, rssKb(c.pid));
    anonPeakKb = Math.max(anonPeakKb, rssKb(c.pid, 'RssAnon'));
  }, 100);
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        bytes += await one(agent);
        count++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  rssPeakKb = Math.max(rssPeakKb, rssKb(c.pid));
  anonPeakKb = Math.max(anonPeakKb, rssKb(c.pid, 'RssAnon'));
  const cpu = cpuMs(c.pid) - cpu0;
  agent.destroy();
  return { count, bytes, seconds, rssPeakKb, anonPeakKb, cpuMs: cpu };
}

/** One CONNECT tunnel (or a direct connection) to the source; resolves with the bytes read. */
export function tunnelDownload(c: Column, sourcePort: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: c.host, port: c.tunnels ? c.port : sourcePort });
    let established = !c.tunnels;
    let head = '';
    let n = 0;
    s.on('data', (d: Buffer) => {
      if (established) {
        n += d.length;
        return;
      }
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!/^HTTP\/1\.[01] 200/.test(head))
        return reject(new Error(`${c.name}: ${head.split('\r\n')[0]}`));
      established = true;
      n += head.length - end - 4;
    });
    s.on('end', () => {
      s.end();
      resolve(n);
    });
    s.on('error', reject);
    if (c.tunnels) {
      const target = `127.0.0.1:${sourcePort}`;
      s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    }
  });
}

export async function latency(c: Column): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  // Half a second unrecorded first, so what the previous measure left behind settles.
  const settle = performance.now() + WARM_MS / 2;
  while (performance.now() < settle) await get(agent, c, '/small');
  const times: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await get(agent, c, '/small');
    times.push(performance.now() - t0);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

// ---- the rounds and the table ---------------------------------------------------------------

/** A row of a table: label, unit, whether higher is better, and whether only proxies have it. */
export type Row = readonly [
  label: string,
  unit: string,
  higherIsBetter: boolean,
  proxyOnly?: boolean,
];

/** One measure: the rows it feeds, one value per row and round. */
export interface Measure {
  readonly rows: readonly Row[];
  run(c: Column): Promise<number[]>;
}

/** results[row][column]: one value per round. */
export class Results {
  readonly byRow = new Map<string, Map<string, number[]>>();

  record(row: string, col: string, v: number): void {
    const byCol = this.byRow.get(row) ?? new Map<string, number[]>();
    this.byRow.set(row, byCol);
    byCol.set(col, [...(byCol.get(col) ?? []), v]);
  }

  get(row: string): Map<string, number[]> | undefined {
    return this.byRow.get(row);
  }
}

/**
 * Runs ROUNDS rounds of every measure on every column, forwards in even
 * rounds and backwards in odd ones, calling `afterRound` after each; returns
 * the load averages before the first round and after each.
 */
export async function runRounds(
  columns: readonly Column[],
  measures: readonly Measure[],
  results: Results,
  afterRound: (round: number, order: readonly Column[]) => void,
): Promise<number[][]> {
  const loads: number[][] = [loadavg()];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? columns : [...columns].reverse();
    for (const m of measures) {
      for (const c of order) {
        part(`round ${round + 1}: ${m.rows[0]?.[0]}, ${c.name}`);
        const values = await m.run(c);
        for (const [i, [row]] of m.rows.entries()) results.record(row, c.name, values[i] ?? 0);
      }
    }
    afterRound(round, order);
    loads.push(loadavg());
  }
  return loads;
}

/** A figure with as many decimals as it needs. */
export const fmt = (n: number): string =>
  n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3);

/** The median of the rounds. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** The load-average line of a run's header. */
export function loadLine(loads: readonly number[][]): string {
  return (
    `load average (1, 5, 15 min) before: ${loads[0]?.map((l) => l.toFixed(2)).join(' ')}; ` +
    `after each round: ${loads
      .slice(1)
      .map((l) => l.map((x) => x.toFixed(2)).join(' '))
      .join(' | ')}\n`
  );
}
