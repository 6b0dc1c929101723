// The forward proxy side by side with a direct connection and with Squid on this machine, in
// alternating rounds of one run: small GETs (32 concurrent), 1 MiB GETs (8 concurrent), CONNECT
// tunnel throughput, latency on one keep-alive connection, and proxy memory: resident (RSS)
// idle at start, at its peak under each load and idle again after the loads, and the private
// (anonymous) part of the peak, which is what each further proxy process costs (the pages of the
// program's own binary are shared by every process that runs it).
//
// Run with `npm run bench` (after `npm run build`). BENCH_ROUNDS (default 3) sets the rounds,
// BENCH_SECONDS (default 3) the length of each measurement. SQUID names the squid binary (default
// `squid` on the PATH or /usr/sbin/squid); without one the Squid column is left out and the run
// says how to install it. BENCH_BASELINE names another build of the proxy program
// (`.../bin/proxy-server.js`, say of main) to run as a fourth column, so a change is measured
// against what it replaces in the same run.
//
// The same client (this process, node:http with a keep-alive Agent, raw sockets for CONNECT)
// measures all three columns; the origin runs in a process of its own, and so does the proxy
// program (started as `node bin/proxy-server.js --config <file>`, with the default limits). Squid
// gets a config of its own in a temp dir: an http_port on a free loopback port, the same allowed
// sources as the forward proxy (127.0.0.0/8), no cache, and the access log ON in both proxies
// (Squid's `access_log stdio:` and the forward proxy's `accessLog`, each in its temp dir).
// Everything stays on 127.0.0.0/8 and every process started is stopped at the end.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const TUNNEL_BYTES = 16 * 1024 * 1024;

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

function startOrigin(): Promise<{ child: ChildProcess; http: number; source: number }> {
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

function findSquid(): string | undefined {
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

function freePort(): Promise<number> {
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

interface Squid {
  readonly child: ChildProcess;
  readonly port: number;
  readonly version: string;
  readonly user: string;
  stop(): Promise<void>;
}

async function startSquid(binary: string): Promise<Squid> {
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

function answers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

// ---- the proxy program: this build, and another one to compare a change with -----------------

async function startProgram(
  program: string,
  name: string,
  host: string,
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

interface Column {
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

function get(agent: Agent, c: Column, p: string): Promise<number> {
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
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssKb(pid: number | undefined, field = 'VmRSS'): number {
  if (pid === undefined) return 0;
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** Runs `concurrency` loops of `one` for SECONDS; returns the count, bytes, seconds and peak RSS. */
async function load(
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
function tunnelDownload(c: Column, sourcePort: number): Promise<number> {
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

async function latency(c: Column): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  // Half a second unrecorded first, so what the previous measure left behind settles.
  const settle = performance.now() + 500;
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

// ---- the run ------------------------------------------------------------------------------

const MIB = 1024 * 1024;
const origin = await startOrigin();
const squidBinary = findSquid();
let squid: Squid | undefined;
let proxy: Awaited<ReturnType<typeof startProgram>> | undefined;
let baseline: Awaited<ReturnType<typeof startProgram>> | undefined;

try {
  proxy = await startProgram(proxyServerPath(), 'forward-proxy', '127.0.5.2');
  const absolute = (p: string) => `http://127.0.0.1:${origin.http}${p}`;
  const columns: Column[] = [
    { name: 'direct', host: '127.0.0.1', port: origin.http, path: (p) => p, tunnels: false },
  ];
  if (squidBinary !== undefined) {
    squid = await startSquid(squidBinary);
    columns.push({
      name: `Squid ${squid.version}`,
      host: '127.0.0.1',
      port: squid.port,
      pid: squid.child.pid,
      path: absolute,
      tunnels: true,
    });
  }
  const baselineProgram = process.env.BENCH_BASELINE;
  if (baselineProgram !== undefined && baselineProgram !== '') {
    baseline = await startProgram(baselineProgram, 'baseline', '127.0.5.250');
    columns.push({
      name: 'baseline',
      host: baseline.host,
      port: baseline.port,
      pid: baseline.child.pid,
      path: absolute,
      tunnels: true,
    });
  }
  columns.push({
    name: 'forward-proxy',
    host: proxy.host,
    port: proxy.port,
    pid: proxy.child.pid,
    path: absolute,
    tunnels: true,
  });

  /** A row of the table; `proxyOnly` rows have no value for the direct column. */
  type Row = readonly [label: string, unit: string, higherIsBetter: boolean, proxyOnly?: boolean];
  // Each measure feeds the rows it names, one value per row and round.
  const measures: { readonly rows: readonly Row[]; run(c: Column): Promise<number[]> }[] = [
    {
      rows: [
        ['small GETs, 32 concurrent', 'req/s', true],
        ['proxy CPU time per small GET', 'µs', false, true],
        ['proxy RSS peak, small GETs', 'MiB', false, true],
        ['proxy private memory peak, small GETs', 'MiB', false, true],
      ],
      async run(c) {
        const r = await load(c, 32, (a) => get(a, c, '/small'));
        const rates = [r.count / r.seconds, (r.cpuMs * 1000) / r.count];
        return [...rates, r.rssPeakKb / 1024, r.anonPeakKb / 1024];
      },
    },
    {
      rows: [
        ['1 MiB GETs, 8 concurrent', 'MiB/s', true],
        ['proxy RSS peak, 1 MiB GETs', 'MiB', false, true],
        ['proxy private memory peak, 1 MiB GETs', 'MiB', false, true],
      ],
      async run(c) {
        const r = await load(c, 8, (a) => get(a, c, '/big'));
        return [r.bytes / MIB / r.seconds, r.rssPeakKb / 1024, r.anonPeakKb / 1024];
      },
    },
    {
      rows: [
        ['CONNECT tunnels, 4 concurrent, 16 MiB each', 'MiB/s', true],
        ['proxy CPU time per MiB through tunnels', 'ms', false, true],
        ['proxy RSS peak, tunnels', 'MiB', false, true],
        ['proxy private memory peak, tunnels', 'MiB', false, true],
      ],
      async run(c) {
        const r = await load(c, 4, () => tunnelDownload(c, origin.source));
        const mib = r.bytes / MIB;
        return [mib / r.seconds, r.cpuMs / mib, r.rssPeakKb / 1024, r.anonPeakKb / 1024];
      },
    },
    {
      rows: [
        ['latency p50, one keep-alive connection', 'ms', false],
        ['latency p99, one keep-alive connection', 'ms', false],
      ],
      async run(c) {
        const r = await latency(c);
        return [r.p50, r.p99];
      },
    },
  ];

  // Idle memory at start: each proxy started and answering, nothing sent through it yet.
  const idleAtStart = new Map(columns.map((c) => [c.name, rssKb(c.pid) / 1024]));
  // Warm every path (JIT, pools) before anything is recorded.
  const warmSeconds = Math.min(1, SECONDS);
  for (const c of columns) {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const end = performance.now() + warmSeconds * 1000;
    while (performance.now() < end)
      await Promise.all([0, 1, 2, 3].map(() => get(agent, c, '/small')));
    agent.destroy();
  }

  // results[row][column] = one value per round
  const results = new Map<string, Map<string, number[]>>();
  const record = (row: string, col: string, v: number) => {
    const byCol = results.get(row) ?? new Map<string, number[]>();
    results.set(row, byCol);
    byCol.set(col, [...(byCol.get(col) ?? []), v]);
  };
  const loads: number[][] = [loadavg()];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order: forwards in even rounds, backwards in odd ones.
    const order = round % 2 === 0 ? columns : [...columns].reverse();
    for (const m of measures) {
      for (const c of order) {
        const values = await m.run(c);
        for (const [i, [row]] of m.rows.entries()) record(row, c.name, values[i] ?? 0);
      }
    }
    for (const c of order) {
      // Added latency per round: the proxy's p50 less the direct p50 of the same round.
      const p50 = results.get('latency p50, one keep-alive connection');
      const mine = p50?.get(c.name)?.[round];
      const direct = p50?.get('direct')?.[round];
      if (c.name !== 'direct' && mine !== undefined && direct !== undefined) {
        record('added p50 latency over direct', c.name, mine - direct);
      }
    }
    for (const c of order) {
      // The peak over the round's three loads: what the done-when compares.
      const peaks = ['small GETs', '1 MiB GETs', 'tunnels'].map(
        (l) => results.get(`proxy RSS peak, ${l}`)?.get(c.name)?.[round] ?? 0,
      );
      if (c.pid !== undefined) record('proxy RSS peak, all loads', c.name, Math.max(...peaks));
    }
    loads.push(loadavg());
  }
  // Idle memory again, once the loads have been over for two seconds.
  await new Promise((r) => setTimeout(r, 2_000));
  for (const c of columns) {
    if (c.pid === undefined) continue;
    record('proxy RSS idle, at start', c.name, idleAtStart.get(c.name) ?? 0);
    record('proxy RSS idle, after the loads', c.name, rssKb(c.pid) / 1024);
  }

  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3));
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
  };
  const rows: Row[] = [
    ...measures.flatMap((m) => m.rows),
    ['added p50 latency over direct', 'ms', false, true],
    ['proxy RSS peak, all loads', 'MiB', false, true],
    ['proxy RSS idle, at start', 'MiB', false, true],
    ['proxy RSS idle, after the loads', 'MiB', false, true],
  ];
  // Ratio columns: this build against Squid, and against the baseline build when run.
  const against = columns
    .filter((c) => c.name.startsWith('Squid') || c.name === 'baseline')
    .map((c) => ({ title: `forward-proxy / ${c.name.split(' ')[0]}`, name: c.name }));
  console.log(
    `node ${process.version}, ${cpus().length} CPUs, origin, proxies and client on loopback; ` +
      `${ROUNDS} alternating rounds of ${SECONDS} s; access log on in every proxy` +
      (squid === undefined ? '' : `; Squid runs as ${squid.user}`),
  );
  console.log(
    `load average (1, 5, 15 min) before: ${loads[0]?.map((l) => l.toFixed(2)).join(' ')}; ` +
      `after each round: ${loads
        .slice(1)
        .map((l) => l.map((x) => x.toFixed(2)).join(' '))
        .join(' | ')}\n`,
  );
  console.log(
    'cells: median of the rounds (best round), every round listed below the table; ' +
      'a ratio compares the medians: above 1 is better for req/s and MiB/s, ' +
      'below 1 is better for ms and memory\n',
  );
  const header = [...columns.map((c) => c.name), ...against.map((a) => a.title)];
  console.log(`| measure | ${header.join(' | ')} |`);
  console.log(`|---|${header.map(() => '---|').join('')}`);
  for (const [row, unit, higher, proxyOnly] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const cells = columns.map((c) => {
      const xs = byCol.get(c.name);
      if (xs === undefined || (proxyOnly && c.pid === undefined)) return '—';
      const best = higher ? Math.max(...xs) : Math.min(...xs);
      return `${fmt(median(xs))} ${unit} (${fmt(best)})`;
    });
    const local = byCol.get('forward-proxy');
    const ratios = against.map((a) => {
      const other = byCol.get(a.name);
      return local === undefined || other === undefined
        ? '—'
        : (median(local) / median(other)).toFixed(2);
    });
    console.log(`| ${row} | ${[...cells, ...ratios].join(' | ')} |`);
  }
  console.log('\nevery round:');
  for (const [row, unit, , proxyOnly] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const parts = columns
      .filter((c) => byCol.has(c.name) && !(proxyOnly && c.pid === undefined))
      .map((c) => `${c.name} ${(byCol.get(c.name) ?? []).map(fmt).join(', ')}`);
    console.log(`- ${row} (${unit}): ${parts.join('; ')}`);
  }
  if (squidBinary === undefined) {
    console.log(
      '\nSquid was not found, so its column is missing. Install it to compare: ' +
        '`apt-get install squid` on Debian or Ubuntu (it is in .ci/apt-packages), ' +
        '`dnf install squid` on Fedora, `brew install squid` on macOS; or set SQUID=/path/to/squid.',
    );
  }
} finally {
  await proxy?.stop();
  await squid?.stop();
  await baseline?.stop();
  origin.child.kill('SIGTERM');
}
