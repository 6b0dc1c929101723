// SOCKS5 CONNECT through the proxy side by side with Dante (`danted`, Debian `dante-server`) and
// microsocks (Debian `microsocks`), and a direct connection, in alternating rounds of one run, the
// same client on each column: tunnel throughput (4 concurrent downloads), new tunnels per second
// (600 of them, 16 concurrent, each one small HTTP exchange and closed), the latency of a new
// tunnel with its exchange (300 one after another), and the latency of an exchange on one open
// tunnel. The ratio columns set this package's
// proxy against each peer (medians): above 1 is better for MiB/s and tunnels/s, below 1 for ms.
//
// Run with `npm run bench` (after `npm run build`; it runs after the other benchmarks) or
// `node bench/socks5.bench.ts`; BENCH_ROUNDS, BENCH_SECONDS and BENCH_SMOKE as in proxy.bench.ts.
// DANTED and MICROSOCKS name the binaries (default: on the PATH or in /usr/sbin); a peer that is
// not installed is left out with the reason (under CI=true, where .ci/apt-packages installs both,
// that fails the run).
//
// The proxy is this package's program with its defaults (SOCKS5 on its HTTP port), no
// authentication, the loopback origin allowed by port; Dante gets a config of its own in a temp
// dir (no authentication, clients and destinations on 127.0.0.0/8, CONNECT only, a log file);
// microsocks runs with its defaults on a loopback port. Everything stays on 127.0.0.0/8 and every
// process started is stopped at the end.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import { which } from '@proxy-op/testkit';
import {
  answers,
  type Column,
  fmt,
  freePort,
  load,
  loadLine,
  type Measure,
  median,
  missingPeer,
  part,
  Results,
  ROUNDS,
  type Row,
  runRounds,
  SECONDS,
  SMOKE,
  startOrigin,
  startProgram,
  TUNNEL_LABEL,
  WARM_MS,
} from './support.ts';

const MIB = 1024 * 1024;

// ---- the client ---------------------------------------------------------------------------

/**
 * A connection to `target` on 127.0.0.1: through the SOCKS5 server of the column (no
 * authentication, CONNECT to an IPv4 address) or straight to it. Resolves paused, with the bytes
 * that came after the server's reply.
 */
function open(c: Column, target: number): Promise<{ socket: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: c.host, port: c.tunnels ? c.port : target });
    s.setNoDelay(true);
    const fail = (why: string) => {
      s.destroy();
      reject(new Error(`${c.name}: ${why}`));
    };
    s.once('error', (e) => fail(e.message));
    if (!c.tunnels) {
      s.once('connect', () => {
        s.removeAllListeners('error');
        s.pause();
        resolve({ socket: s, rest: Buffer.alloc(0) });
      });
      return;
    }
    let buf = Buffer.alloc(0);
    let stage: 'method' | 'reply' = 'method';
    s.once('connect', () => s.write(Buffer.from([5, 1, 0])));
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (stage === 'method') {
        if (buf.length < 2) return;
        if (buf[0] !== 5 || buf[1] !== 0) return fail(`method answer ${buf[0]} ${buf[1]}`);
        buf = buf.subarray(2);
        stage = 'reply';
        s.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, target >> 8, target & 0xff]));
      }
      if (buf.length < 5) return;
      if (buf[1] !== 0) return fail(`CONNECT answered ${buf[1]}`);
      const atyp = buf[3];
      const length = atyp === 1 ? 10 : atyp === 4 ? 22 : 7 + (buf[4] ?? 0);
      if (buf.length < length) return;
      s.off('data', onData);
      s.removeAllListeners('error');
      s.pause();
      resolve({ socket: s, rest: buf.subarray(length) });
    };
    s.on('data', onData);
  });
}

/** One tunnel to the byte source; resolves with the bytes read to its end. */
async function download(c: Column, source: number): Promise<number> {
  const { socket, rest } = await open(c, source);
  return new Promise((resolve, reject) => {
    let n = rest.length;
    socket.on('data', (d: Buffer) => {
      n += d.length;
    });
    socket.once('end', () => {
      socket.end();
      resolve(n);
    });
    socket.once('error', reject);
    socket.resume();
  });
}

const SMALL_GET = Buffer.from('GET /small HTTP/1.1\r\nHost: origin\r\n\r\n');

/** Sends one small GET on an open connection and resolves when its whole answer is in. */
function exchange(socket: Socket, first: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = first.toString('latin1');
    const done = () => {
      const head = got.indexOf('\r\n\r\n');
      if (head < 0) return false;
      const length = Number(/content-length: *(\d+)/i.exec(got.slice(0, head))?.[1] ?? 0);
      if (got.length < head + 4 + length) return false;
      if (!got.startsWith('HTTP/1.1 200'))
        throw new Error(`the origin said ${got.split('\r\n')[0]}`);
      return true;
    };
    const onData = (d: Buffer) => {
      got += d.toString('latin1');
      try {
        if (!done()) return;
      } catch (e) {
        return reject(e);
      }
      socket.off('data', onData);
      socket.off('error', reject);
      resolve();
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(SMALL_GET);
    socket.resume();
  });
}

/** A new tunnel to the HTTP origin, one small GET, closed; resolves with its time in ms. */
async function oneShot(c: Column, http: number): Promise<number> {
  const t0 = performance.now();
  const { socket, rest } = await open(c, http);
  await exchange(socket, rest);
  const ms = performance.now() - t0;
  socket.destroy();
  return ms;
}

/**
 * The p50 and p99 of `sample` run one after another: `count` times, or for SECONDS when no count
 * is given (after a settling pause either way).
 */
async function latency(
  sample: () => Promise<number>,
  count?: number,
): Promise<{ p50: number; p99: number }> {
  if (count !== undefined) for (let i = 0; i < count / 10; i++) await sample();
  else {
    const settle = performance.now() + WARM_MS / 2;
    while (performance.now() < settle) await sample();
  }
  const times: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  while (count === undefined ? performance.now() < end : times.length < count)
    times.push(await sample());
  if (times.length === 0) throw new Error('no exchange was timed');
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

/**
 * New tunnels are counted, not timed: each leaves two connections in TIME_WAIT for a minute (the
 * client's to the server, the server's to the origin), and a timed loop of thousands a second
 * runs loopback out of ephemeral ports within a run.
 */
const NEW_TUNNELS = SMOKE ? 100 : 600;
const NEW_TUNNEL_SAMPLES = SMOKE ? 50 : 300;

/** `total` new tunnels with one small GET each, `concurrency` at a time. */
async function burst(c: Column, concurrency: number, total: number, http: number) {
  let left = total;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left > 0) {
        left--;
        await oneShot(c, http);
      }
    }),
  );
  return { count: total, seconds: (performance.now() - t0) / 1000 };
}

// ---- the peers ------------------------------------------------------------------------------

interface Peer {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

function binary(env: string, name: string): string | undefined {
  const named = process.env[env];
  return named !== undefined && named !== '' ? named : which(name);
}

/** Starts a peer on a free loopback port and waits until it answers. */
async function startPeer(
  name: string,
  file: string,
  args: (port: number, dir: string) => string[],
  dir: string,
): Promise<Peer> {
  const port = await freePort();
  const child = spawn(file, args(port, dir), { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
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
  };
  const deadline = Date.now() + 10_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { name, port, child, stop };
}

function danteConfig(port: number, dir: string): string {
  const asRoot = process.getuid?.() === 0;
  const conf = [
    `logoutput: ${join(dir, 'danted.log')}`,
    `internal: 127.0.0.1 port = ${port}`,
    'external: 127.0.0.1',
    'socksmethod: none',
    'clientmethod: none',
    ...(asRoot ? ['user.privileged: root', 'user.unprivileged: nobody'] : []),
    'client pass {',
    '  from: 127.0.0.0/8 to: 0.0.0.0/0',
    '}',
    'socks pass {',
    '  from: 127.0.0.0/8 to: 127.0.0.0/8',
    '  command: connect',
    '}',
  ].join('\n');
  const file = join(dir, 'danted.conf');
  writeFileSync(file, `${conf}\n`);
  return file;
}

const version = (f: () => string | undefined) => {
  try {
    return f() ?? '?';
  } catch {
    return '?';
  }
};

// ---- the run ------------------------------------------------------------------------------

part('socks5: the origin, the proxy, the peers');
const origin = await startOrigin();
const dir = mkdtempSync(join(tmpdir(), 'forward-proxy-bench-socks5-'));
const started: { stop(): Promise<void> }[] = [];
try {
  const egress = { allow: [`127.0.0.1:${origin.http}`, `127.0.0.1:${origin.source}`] };
  const proxy = await startProgram(proxyServerPath(), 'forward-proxy', '127.0.210.40', { egress });
  started.push(proxy);
  const columns: Column[] = [
    { name: 'direct', host: '127.0.0.1', port: 0, path: (p) => p, tunnels: false },
    {
      name: 'forward-proxy',
      host: proxy.host,
      port: proxy.port,
      pid: proxy.child.pid,
      path: (p) => p,
      tunnels: true,
    },
  ];
  const peers: string[] = [];
  const danted = binary('DANTED', 'danted');
  if (danted === undefined) missingPeer('Dante', '`apt-get install dante-server`, or set DANTED');
  else {
    const v = version(
      () => /v(\d+(?:\.\d+)*)/.exec(execFileSync(danted, ['-v'], { encoding: 'utf8' }))?.[1],
    );
    const peer = await startPeer('Dante', danted, (port, d) => ['-f', danteConfig(port, d)], dir);
    started.push(peer);
    peers.push(`Dante ${v}`);
    columns.push({
      name: `Dante ${v}`,
      host: '127.0.0.1',
      port: peer.port,
      pid: peer.child.pid,
      path: (p) => p,
      tunnels: true,
    });
  }
  const microsocks = binary('MICROSOCKS', 'microsocks');
  if (microsocks === undefined)
    missingPeer('microsocks', '`apt-get install microsocks`, or set MICROSOCKS');
  else {
    const v = version(
      () =>
        // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format
        execFileSync('dpkg-query', ['-W', '-f', '${Version}', 'microsocks'], {
          encoding: 'utf8',
        }).split('-')[0],
    );
    const peer = await startPeer(
      'microsocks',
      microsocks,
      (port) => ['-i', '127.0.0.1', '-p', String(port)],
      dir,
    );
    started.push(peer);
    peers.push(`microsocks ${v}`);
    columns.push({
      name: `microsocks ${v}`,
      host: '127.0.0.1',
      port: peer.port,
      pid: peer.child.pid,
      path: (p) => p,
      tunnels: true,
    });
  }

  const measures: Measure[] = [
    {
      rows: [[`CONNECT tunnels, 4 concurrent, ${TUNNEL_LABEL}`, 'MiB/s', true]],
      async run(c) {
        const r = await load(c, 4, () => download(c, origin.source));
        if (r.count === 0) throw new Error(`${c.name}: no tunnel finished`);
        return [r.bytes / MIB / r.seconds];
      },
    },
    {
      rows: [[`new tunnels, 16 concurrent, one small GET each`, 'tunnels/s', true]],
      async run(c) {
        const r = await burst(c, 16, NEW_TUNNELS, origin.http);
        return [r.count / r.seconds];
      },
    },
    {
      rows: [
        ['latency p50, new tunnel and one small GET', 'ms', false],
        ['latency p99, new tunnel and one small GET', 'ms', false],
      ],
      async run(c) {
        const r = await latency(() => oneShot(c, origin.http), NEW_TUNNEL_SAMPLES);
        return [r.p50, r.p99];
      },
    },
    {
      rows: [
        ['latency p50, small GETs on one open tunnel', 'ms', false],
        ['latency p99, small GETs on one open tunnel', 'ms', false],
      ],
      async run(c) {
        const { socket, rest } = await open(c, origin.http);
        let first = rest;
        const r = await latency(async () => {
          const t0 = performance.now();
          await exchange(socket, first);
          first = Buffer.alloc(0);
          return performance.now() - t0;
        });
        socket.destroy();
        return [r.p50, r.p99];
      },
    },
  ];

  part('socks5: warm-up');
  for (const c of columns) await burst(c, 4, NEW_TUNNEL_SAMPLES, origin.http);
  const results = new Results();
  const loads = await runRounds(columns, measures, results, () => {});

  const rows: Row[] = measures.flatMap((m) => m.rows);
  const against = columns.filter(
    (c) => c.name.startsWith('Dante') || c.name.startsWith('microsocks'),
  );
  console.log(
    `node ${process.version}, ${cpus().length} CPUs, origin, SOCKS5 servers and client on loopback; ` +
      `${ROUNDS} alternating rounds of ${SECONDS} s; SOCKS5 without authentication, CONNECT to an IPv4 address`,
  );
  console.log(loadLine(loads));
  console.log(
    'cells: median of the rounds (best round); a ratio compares the medians: above 1 is better ' +
      'for MiB/s and tunnels/s, below 1 for ms\n',
  );
  const header = [
    ...columns.map((c) => c.name),
    ...against.map((c) => `forward-proxy / ${c.name.split(' ')[0]}`),
  ];
  console.log(`| measure | ${header.join(' | ')} |`);
  console.log(`|---|${header.map(() => '---:|').join('')}`);
  for (const [row, unit, higher] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const cells = columns.map((c) => {
      const xs = byCol.get(c.name);
      if (xs === undefined) return '—';
      return `${fmt(median(xs))} ${unit} (${fmt(higher ? Math.max(...xs) : Math.min(...xs))})`;
    });
    const ours = byCol.get('forward-proxy') ?? [];
    const ratios = against.map((c) => {
      const theirs = byCol.get(c.name);
      return theirs === undefined ? '—' : `${(median(ours) / median(theirs)).toFixed(2)}`;
    });
    console.log(`| ${row} | ${[...cells, ...ratios].join(' | ')} |`);
  }
  console.log('\nevery round:');
  for (const [row, unit] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const each = [...byCol.entries()].map(([c, xs]) => `${c} ${xs.map(fmt).join(', ')}`);
    console.log(`- ${row} (${unit}): ${each.join('; ')}`);
  }
  if (peers.length < 2)
    console.log(
      '\nleft out (not installed): ' +
        ['Dante', 'microsocks'].filter((p) => !peers.some((q) => q.startsWith(p))).join(', '),
    );
} finally {
  for (const s of started.reverse()) await s.stop();
  origin.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
