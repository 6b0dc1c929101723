// The gateway side by side with what it replaces, in alternating rounds of one run, the same
// client load on each column: straight to one upstream proxy (no gateway), through the gateway
// (this package's program with `parents`: two upstream proxies), and through Squid as a parent-
// chaining proxy to the same two upstreams (`cache_peer … parent round-robin`, `never_direct
// allow all`). Rows: small GETs (32 concurrent), CONNECT tunnel throughput (4 concurrent, 16 MiB
// each), latency on one keep-alive connection (p50, p99) and the p50 each adds over going
// straight to an upstream.
//
// Run with `npm run bench:gateway` (after `npm run build`); BENCH_ROUNDS (default 3) and
// BENCH_SECONDS (default 3) as in the proxy benchmark, SQUID as there. The upstreams are this
// package's proxy program, without authentication (so the columns differ only by what sits in
// front of them); the access log is on in every proxy.
import { writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
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
  Results,
  ROUNDS,
  type Row,
  runRounds,
  SECONDS,
  type Squid,
  startOrigin,
  startProgram,
  startSquid,
  tunnelDownload,
} from './support.ts';

const MIB = 1024 * 1024;
const squidBinary = findSquid();
if (squidBinary === undefined) {
  console.log(
    'Squid was not found, and it is what the gateway is compared with: `apt-get install squid` ' +
      '(it is in .ci/apt-packages), or set SQUID=/path/to/squid.',
  );
  process.exit(1);
}
const origin = await startOrigin();
const started: { stop(): Promise<void> }[] = [];
let squid: Squid | undefined;
try {
  const ups = [];
  // The origin is on loopback, which the default destination policy refuses: allowed by port.
  const egress = { allow: [`127.0.0.1:${origin.http}`, `127.0.0.1:${origin.source}`] };
  for (const [i, host] of ['127.0.5.10', '127.0.5.11'].entries()) {
    const up = await startProgram(proxyServerPath(), `up-${i}`, host, { egress });
    started.push(up);
    ups.push(up);
  }
  const list = join(tmpdir(), `forward-proxy-bench-upstreams-${process.pid}.json`);
  writeFileSync(
    list,
    JSON.stringify({
      upstreams: ups.map((u, i) => ({ name: `up-${i}`, url: `http://${u.host}:${u.port}` })),
    }),
  );
  const gateway = await startProgram(proxyServerPath(), 'gateway', '127.0.5.20', {
    parents: { file: list },
    egress,
  });
  started.push(gateway);
  squid = await startSquid(squidBinary, [
    ...ups.map(
      (u, i) =>
        `cache_peer ${u.host} parent ${u.port} 0 no-query no-digest round-robin name=up${i}`,
    ),
    'never_direct allow all',
  ]);
  const absolute = (p: string) => `http://127.0.0.1:${origin.http}${p}`;
  const columns: Column[] = [
    {
      name: 'one upstream',
      host: ups[0]?.host ?? '',
      port: ups[0]?.port ?? 0,
      pid: ups[0]?.child.pid,
      path: absolute,
      tunnels: true,
    },
    {
      name: 'gateway',
      host: gateway.host,
      port: gateway.port,
      pid: gateway.child.pid,
      path: absolute,
      tunnels: true,
    },
    {
      name: `Squid ${squid.version} as parent`,
      host: '127.0.0.1',
      port: squid.port,
      pid: squid.child.pid,
      path: absolute,
      tunnels: true,
    },
  ];
  const squidName = columns[2]?.name ?? '';
  const measures: Measure[] = [
    {
      rows: [['small GETs, 32 concurrent', 'req/s', true]],
      async run(c) {
        const r = await load(c, 32, (a) => get(a, c, '/small'));
        return [r.count / r.seconds];
      },
    },
    {
      rows: [['CONNECT tunnels, 4 concurrent, 16 MiB each', 'MiB/s', true]],
      async run(c) {
        const r = await load(c, 4, () => tunnelDownload(c, origin.source));
        return [r.bytes / MIB / r.seconds];
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
  const results = new Results();
  const loads = await runRounds(columns, measures, results, (round) => {
    const p50 = results.get('latency p50, one keep-alive connection');
    const base = p50?.get('one upstream')?.[round] ?? 0;
    for (const c of columns.slice(1)) {
      const mine = p50?.get(c.name)?.[round] ?? 0;
      results.record('added p50 latency over one upstream', c.name, mine - base);
    }
  });
  console.log(
    `node ${process.version}, ${cpus().length} CPUs, origin, proxies and client on loopback; ` +
      `${ROUNDS} alternating rounds of ${SECONDS} s; Squid runs as ${squid.user}`,
  );
  console.log(loadLine(loads));
  console.log(
    'cells: median of the rounds (best round); the ratio compares the medians: above 1 is ' +
      'better for req/s and MiB/s, below 1 for ms\n',
  );
  const header = [...columns.map((c) => c.name), 'gateway / Squid'];
  console.log(`| measure | ${header.join(' | ')} |`);
  console.log(`|---|${header.map(() => '---|').join('')}`);
  const rows = [
    ...measures.flatMap((m) => m.rows),
    ['added p50 latency over one upstream', 'ms', false] as Row,
  ];
  for (const [row, unit, higher] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const cells = columns.map((c) => {
      const xs = byCol.get(c.name);
      if (xs === undefined) return '—';
      return `${fmt(median(xs))} ${unit} (${fmt(higher ? Math.max(...xs) : Math.min(...xs))})`;
    });
    const g = byCol.get('gateway');
    const sq = byCol.get(squidName);
    const ratio = g === undefined || sq === undefined ? '—' : (median(g) / median(sq)).toFixed(2);
    console.log(`| ${row} | ${[...cells, ratio].join(' | ')} |`);
  }
  console.log('\nevery round:');
  for (const [row, unit] of rows) {
    const byCol = results.get(row);
    if (byCol === undefined) continue;
    const parts = [...byCol.entries()].map(([c, xs]) => `${c} ${xs.map(fmt).join(', ')}`);
    console.log(`- ${row} (${unit}): ${parts.join('; ')}`);
  }
} finally {
  for (const s of started.reverse()) await s.stop();
  await squid?.stop();
  origin.child.kill('SIGTERM');
}
