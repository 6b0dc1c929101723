// The forward proxy side by side with a direct connection and with Squid on this machine, in
// alternating rounds of one run: small GETs (32 concurrent), 1 MiB GETs (8 concurrent), CONNECT
// tunnel throughput, latency on one keep-alive connection, and proxy memory: resident (RSS)
// idle at start, at its peak under each load and idle again after the loads, and the private
// (anonymous) part of the peak, which is what each further proxy process costs (the pages of the
// program's own binary are shared by every process that runs it).
//
// Run with `npm run bench` (after `npm run build`; it runs front-door.bench.ts next). BENCH_ROUNDS (default 3) sets the rounds,
// BENCH_SECONDS (default 3) the length of each measurement. SQUID names the squid binary (default
// `squid` on the PATH or /usr/sbin/squid); without one the Squid column is left out and the run
// says how to install it (under CI=true a missing Squid fails the run). BENCH_SMOKE=1 is the smoke
// run CI makes (one short round, 1 MiB tunnels). BENCH_BASELINE names another build of the proxy program
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
import { Agent } from 'node:http';
import { cpus } from 'node:os';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import {
  type Column,
  findSquid,
  fmt,
  get,
  latency,
  load,
  loadLine,
  type Measure,
  median,
  missingPeer,
  part,
  Results,
  ROUNDS,
  type Row,
  rssKb,
  runRounds,
  SECONDS,
  type Squid,
  startOrigin,
  startProgram,
  startSquid,
  TUNNEL_LABEL,
  tunnelDownload,
  WARM_MS,
} from './support.ts';

// ---- the run ------------------------------------------------------------------------------

const MIB = 1024 * 1024;
part('proxy: the origin, the proxies');
const origin = await startOrigin();
const squidBinary = findSquid();
let squid: Squid | undefined;
let proxy: Awaited<ReturnType<typeof startProgram>> | undefined;
let baseline: Awaited<ReturnType<typeof startProgram>> | undefined;

try {
  // The origin is on loopback, which the default destination policy refuses: allowed by port.
  const egress = { allow: [`127.0.0.1:${origin.http}`, `127.0.0.1:${origin.source}`] };
  proxy = await startProgram(proxyServerPath(), 'forward-proxy', '127.0.210.2', { egress });
  const absolute = (p: string) => `http://127.0.0.1:${origin.http}${p}`;
  const columns: Column[] = [
    { name: 'direct', host: '127.0.0.1', port: origin.http, path: (p) => p, tunnels: false },
  ];
  if (squidBinary === undefined) {
    missingPeer(
      'Squid',
      '`apt-get install squid` on Debian or Ubuntu, `dnf install squid` on Fedora, ' +
        '`brew install squid` on macOS; or set SQUID=/path/to/squid',
    );
  } else {
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
    baseline = await startProgram(baselineProgram, 'baseline', '127.0.210.250', { egress });
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

  // Each measure feeds the rows it names, one value per row and round; `proxyOnly` rows have no
  // value for the direct column.
  const measures: Measure[] = [
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
        [`CONNECT tunnels, 4 concurrent, ${TUNNEL_LABEL}`, 'MiB/s', true],
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
  part('proxy: warm-up');
  const warmSeconds = Math.min(WARM_MS / 1000, SECONDS);
  for (const c of columns) {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const end = performance.now() + warmSeconds * 1000;
    while (performance.now() < end)
      await Promise.all([0, 1, 2, 3].map(() => get(agent, c, '/small')));
    agent.destroy();
  }

  const results = new Results();
  const record = (row: string, col: string, v: number) => results.record(row, col, v);
  const loads = await runRounds(columns, measures, results, (round, order) => {
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
  });
  // Idle memory again, once the loads have been over for two seconds.
  part('proxy: idle memory after the loads');
  await new Promise((r) => setTimeout(r, 2 * WARM_MS));
  for (const c of columns) {
    if (c.pid === undefined) continue;
    record('proxy RSS idle, at start', c.name, idleAtStart.get(c.name) ?? 0);
    record('proxy RSS idle, after the loads', c.name, rssKb(c.pid) / 1024);
  }

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
  console.log(loadLine(loads));
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
} finally {
  await proxy?.stop();
  await squid?.stop();
  await baseline?.stop();
  origin.child.kill('SIGTERM');
}
