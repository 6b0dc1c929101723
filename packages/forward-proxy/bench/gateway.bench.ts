// The gateway side by side with what it replaces, in alternating rounds of one run, the same
// client load on each column: straight to one upstream proxy (no gateway), through the gateway
// (this package's program with `parents`: two upstream proxies), and through Squid as a parent-
// chaining proxy to the same two upstreams (`cache_peer … parent round-robin`, `never_direct
// allow all`). Rows: small GETs (32 concurrent), CONNECT tunnel throughput (4 concurrent, 16 MiB
// each), latency on one keep-alive connection (p50, p99) and the p50 each adds over going
// straight to an upstream. Beside them, HAProxy (Debian `haproxy`) in TCP mode balancing the same
// two upstreams round-robin, the plain load balancer a gateway could be replaced with; the
// `gateway / HAProxy` column compares the two.
//
// Run with `npm run bench:gateway` (after `npm run build`; `npm run bench` runs it too);
// BENCH_ROUNDS (default 3), BENCH_SECONDS (default 3), BENCH_SMOKE and SQUID as in the proxy
// benchmark, HAPROXY names the haproxy binary; without Squid or HAProxy its column is left out
// with the reason (under CI=true, where .ci/apt-packages installs both, that fails the run). The upstreams are this
// package's proxy program, without authentication (so the columns differ only by what sits in
// front of them); the access log is on in every proxy.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import { which } from '@proxy-op/testkit';
import {
  answers,
  type Column,
  findSquid,
  fmt,
  freePort,
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
  runRounds,
  SECONDS,
  type Squid,
  startOrigin,
  startProgram,
  startSquid,
  TUNNEL_LABEL,
  tunnelDownload,
} from './support.ts';

const MIB = 1024 * 1024;
const squidBinary = findSquid();
if (squidBinary === undefined)
  missingPeer('Squid', '`apt-get install squid`, or set SQUID=/path/to/squid');
const haproxyBinary =
  process.env.HAPROXY !== undefined && process.env.HAPROXY !== ''
    ? process.env.HAPROXY
    : which('haproxy');
if (haproxyBinary === undefined)
  missingPeer('HAProxy', '`apt-get install haproxy`, or set HAPROXY=/path/to/haproxy');

/** HAProxy in TCP mode on a free loopback port, balancing `members` round-robin. */
async function startHaproxy(
  binary: string,
  members: readonly { host: string; port: number }[],
): Promise<{ port: number; pid: number | undefined; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'forward-proxy-bench-haproxy-'));
  const port = await freePort();
  const conf = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode tcp',
    '  timeout connect 5s',
    '  timeout client 60s',
    '  timeout server 60s',
    'frontend gateway',
    `  bind 127.0.0.1:${port}`,
    '  default_backend members',
    'backend members',
    '  balance roundrobin',
    ...members.map((m, i) => `  server up${i} ${m.host}:${m.port}`),
  ].join('\n');
  writeFileSync(join(dir, 'haproxy.cfg'), `${conf}\n`);
  const child = spawn(binary, ['-db', '-f', join(dir, 'haproxy.cfg')], {
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
  while (!(await answers(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error('haproxy did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, pid: child.pid, stop };
}

part('gateway: the origin, two upstreams, the gateway');
const origin = await startOrigin();
const started: { stop(): Promise<void> }[] = [];
let squid: Squid | undefined;
try {
  const ups = [];
  // The origin is on loopback, which the default destination policy refuses: allowed by port.
  const egress = { allow: [`127.0.0.1:${origin.http}`, `127.0.0.1:${origin.source}`] };
  for (const [i, host] of ['127.0.210.10', '127.0.210.11'].entries()) {
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
  const gateway = await startProgram(proxyServerPath(), 'gateway', '127.0.210.20', {
    parents: { file: list },
    egress,
  });
  started.push(gateway);
  if (squidBinary !== undefined)
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
  ];
  if (squid !== undefined)
    columns.push({
      name: `Squid ${squid.version} as parent`,
      host: '127.0.0.1',
      port: squid.port,
      pid: squid.child.pid,
      path: absolute,
      tunnels: true,
    });
  const squidName = squid === undefined ? '' : (columns[2]?.name ?? '');
  let haproxyName = '';
  if (haproxyBinary !== undefined) {
    const version =
      /version (\S+)/i.exec(execFileSync(haproxyBinary, ['-v'], { encoding: 'utf8' }))?.[1] ?? '?';
    const lb = await startHaproxy(haproxyBinary, ups);
    started.push(lb);
    haproxyName = `HAProxy ${version.split('-')[0]} (TCP)`;
    columns.push({
      name: haproxyName,
      host: '127.0.0.1',
      port: lb.port,
      pid: lb.pid,
      path: absolute,
      tunnels: true,
    });
  }
  const measures: Measure[] = [
    {
      rows: [['small GETs, 32 concurrent', 'req/s', true]],
      async run(c) {
        const r = await load(c, 32, (a) => get(a, c, '/small'));
        return [r.count / r.seconds];
      },
    },
    {
      rows: [[`CONNECT tunnels, 4 concurrent, ${TUNNEL_LABEL}`, 'MiB/s', true]],
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
      `${ROUNDS} alternating rounds of ${SECONDS} s` +
      (squid === undefined ? '' : `; Squid runs as ${squid.user}`),
  );
  console.log(loadLine(loads));
  console.log(
    'cells: median of the rounds (best round); a ratio compares the medians: above 1 is ' +
      'better for req/s and MiB/s, below 1 for ms\n',
  );
  const against = [
    ...(squidName === '' ? [] : [{ title: 'gateway / Squid', name: squidName }]),
    ...(haproxyName === '' ? [] : [{ title: 'gateway / HAProxy', name: haproxyName }]),
  ];
  const header = [...columns.map((c) => c.name), ...against.map((a) => a.title)];
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
    const ratios = against.map((a) => {
      const other = byCol.get(a.name);
      return g === undefined || other === undefined ? '—' : (median(g) / median(other)).toFixed(2);
    });
    console.log(`| ${row} | ${[...cells, ...ratios].join(' | ')} |`);
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
