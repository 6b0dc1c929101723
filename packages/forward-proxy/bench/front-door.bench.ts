// What the front door costs, in alternating rounds of one run (`npm run bench` runs it after
// proxy.bench.ts; `node bench/front-door.bench.ts` alone, after `npm run build`):
//
// - auth under attack: a legitimate client's latency (p50, p99; one keep-alive connection, its
//   credential verified once and kept) through a proxy with authentication, idle, then while two
//   attacker loops (processes of their own, from another source address) send wrong passwords:
//   1 KiB and longer (up to 12 KiB, refused unchecked), and just under the bound (700 bytes,
//   the longest a check verifies: each one costs 25 ms of hashing until the source's failures
//   are bounded); and, to tell the check's cost from the flood's, the same two loops sending no
//   credential at all (answered 407 with nothing to check). Goal: within 2x of idle.
// - destination policy cost: small-GET throughput (32 concurrent) and the proxy's CPU time per
//   request, through one proxy with a policy (deny and allow entries, the origin allowed by
//   address and port) and one with an allow-everything policy, in alternating rounds; and the
//   matcher alone, per check of a public address walking every default range. Goal: under 3%.
//
// BENCH_ROUNDS (default 3), BENCH_SECONDS (default 3) and BENCH_SMOKE as in proxy.bench.ts. Everything stays
// on 127.0.0.0/8, and every process started is stopped at the end.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileEgressPolicy } from '@proxy-op/egress';
import { hashPassword, proxyServerPath } from '@proxy-op/forward-proxy';
import {
  type Column,
  fmt,
  get,
  load,
  loadLine,
  median,
  part,
  ROUNDS,
  SECONDS,
  SMOKE,
  startOrigin,
  startProgram,
  WARM_MS,
} from './support.ts';

part('front door: the origin');
const origin = await startOrigin();
const dir = mkdtempSync(join(tmpdir(), 'forward-proxy-bench-front-door-'));
const user = { name: 'client', password: 'legitimate-client-pass' };
const passwordFile = join(dir, 'passwd');
writeFileSync(passwordFile, `${user.name}:${hashPassword(user.password)}\n`);
const originAllowed = [`127.0.0.1:${origin.http}`];
const programs: Awaited<ReturnType<typeof startProgram>>[] = [];

/** Two attacker loops from 127.0.0.3, each a process of its own, for `seconds`. */
const ATTACKER = `
import { connect } from 'node:net';
const [host, port, min, max, seconds] = JSON.parse(process.argv[1]);
const end = Date.now() + seconds * 1000;
const statuses = {};
while (Date.now() < end) {
  const length = min + Math.floor(Math.random() * (max - min + 1));
  const password = 'x'.repeat(length);
  // max 0: no credential at all (the same flood, with nothing to check).
  const auth = max === 0 ? '' : 'Proxy-Authorization: Basic ' + Buffer.from('client:' + password).toString('base64') + '\\r\\n';
  const status = await new Promise((resolve) => {
    const s = connect({ host, port, localAddress: '127.0.0.3' });
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d) => { got += d; });
    s.on('error', () => resolve('error'));
    s.on('close', () => resolve(got.slice(9, 12) || 'closed'));
    s.write('GET http://127.0.0.1:1/ HTTP/1.1\\r\\nHost: x\\r\\n' + auth + '\\r\\n');
  });
  statuses[status] = (statuses[status] ?? 0) + 1;
}
process.stdout.write(JSON.stringify(statuses));
`;

function attack(
  host: string,
  port: number,
  min: number,
  max: number,
  seconds: number,
): { child: ChildProcess; done: Promise<Record<string, number>> } {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', ATTACKER, JSON.stringify([host, port, min, max, seconds])],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const done = new Promise<Record<string, number>>((resolve) =>
    child.once('exit', () =>
      resolve(out === '' ? {} : (JSON.parse(out) as Record<string, number>)),
    ),
  );
  return { child, done };
}

/** The legitimate client's latency through the proxy for SECONDS (after half a second unrecorded). */
async function clientLatency(host: string, port: number): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const authorization = `Basic ${Buffer.from(`${user.name}:${user.password}`).toString('base64')}`;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        {
          agent,
          host,
          port,
          localAddress: '127.0.0.2',
          path: `http://127.0.0.1:${origin.http}/small`,
          headers: { 'proxy-authorization': authorization },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`client got ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  const settle = performance.now() + WARM_MS / 2;
  while (performance.now() < settle) await one();
  const times: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await one();
    times.push(performance.now() - t0);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

try {
  const loads: number[][] = [];
  const loadavg = () => (process.getBuiltinModule('node:os') as typeof import('node:os')).loadavg();
  loads.push(loadavg());

  // ---- auth under attack ----
  part('front door: a proxy with authentication');
  const authed = await startProgram(proxyServerPath(), 'auth', '127.0.210.30', {
    allowedSources: ['127.0.0.0/8'],
    auth: { realm: 'bench', passwordFile },
    egress: { allow: originAllowed },
  });
  programs.push(authed);
  const phases = [
    'idle',
    'the same flood without credentials (nothing to check)',
    'attack, 1 KiB to 12 KiB passwords',
    'attack, 700-byte passwords',
  ] as const;
  const lat = new Map<string, { p50: number[]; p99: number[] }>(
    phases.map((p) => [p, { p50: [], p99: [] }]),
  );
  const attackers: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const phase of phases) {
      part(`front door: round ${round + 1}: ${phase}`);
      const loops =
        phase === 'idle'
          ? []
          : [0, 1].map(() =>
              phase.includes('700')
                ? attack(authed.host, authed.port, 700, 700, SECONDS + 1)
                : phase.includes('KiB')
                  ? attack(authed.host, authed.port, 1024, 12 * 1024, SECONDS + 1)
                  : attack(authed.host, authed.port, 0, 0, SECONDS + 1),
            );
      const r = await clientLatency(authed.host, authed.port);
      lat.get(phase)?.p50.push(r.p50);
      lat.get(phase)?.p99.push(r.p99);
      const seen = await Promise.all(loops.map((l) => l.done));
      if (seen.length > 0) attackers.push(`${phase}, round ${round + 1}: ${JSON.stringify(seen)}`);
    }
    loads.push(loadavg());
  }

  // ---- destination policy cost ----
  part('front door: destination policy cost');
  const policy = {
    deny: ['10.9.0.0/16', 'blocked.example', '*.ads.example', '192.0.2.0/24:25'],
    allow: ['10.20.0.0/16', 'git.internal.example:8443', '*.corp.example', ...originAllowed],
  };
  const withPolicy = await startProgram(proxyServerPath(), 'policy', '127.0.210.31', {
    egress: policy,
  });
  const allowAll = await startProgram(proxyServerPath(), 'allow-all', '127.0.210.32', {
    egress: { allow: ['0.0.0.0/0:1-65535', '[::/0]:1-65535'] },
  });
  programs.push(withPolicy, allowAll);
  const columns: Column[] = [withPolicy, allowAll].map((p, i) => ({
    name: i === 0 ? 'policy' : 'allow everything',
    host: p.host,
    port: p.port,
    pid: p.child.pid,
    path: (path: string) => `http://127.0.0.1:${origin.http}${path}`,
    tunnels: true,
  }));
  for (const c of columns) {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const end = performance.now() + WARM_MS;
    while (performance.now() < end)
      await Promise.all([0, 1, 2, 3].map(() => get(agent, c, '/small')));
    agent.destroy();
  }
  const rate = new Map<string, number[]>(columns.map((c) => [c.name, []]));
  const cpu = new Map<string, number[]>(columns.map((c) => [c.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? columns : [...columns].reverse();
    for (const c of order) {
      const r = await load(c, 32, (a) => get(a, c, '/small'));
      rate.get(c.name)?.push(r.count / r.seconds);
      cpu.get(c.name)?.push((r.cpuMs * 1000) / r.count);
    }
    loads.push(loadavg());
  }
  // The matcher alone, with the policy: the check every request pays (a public literal address,
  // every default range walked), and the one each new connection to a name pays per address.
  const matcher = compileEgressPolicy(policy, { ownAddresses: ['198.51.100.7', 'fe80::1'] });
  part('front door: the matcher alone');
  const checks = SMOKE ? 10_000 : 1_000_000;
  const timed = (check: () => unknown) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < checks; i++) if (check() !== undefined) throw new Error('refused');
    return Number(process.hrtime.bigint() - t0) / checks;
  };
  const nsPerCheck = timed(() => matcher.checkHost('93.184.215.14', 443, 'connect'));
  const nsPerAddress = timed(() =>
    matcher.checkAddress('93.184.215.14', 443, 'connect', 'example.com'),
  );

  // ---- the tables ----
  console.log(
    `node ${process.version}; ${ROUNDS} rounds of ${SECONDS} s; proxies, origin, clients on loopback`,
  );
  console.log(loadLine(loads));
  console.log('auth under attack: the legitimate client, median of the rounds (best round)\n');
  console.log('| phase | latency p50 | latency p99 | p50 / idle | p99 / idle |');
  console.log('|---|---:|---:|---:|---:|');
  const idle = lat.get('idle') ?? { p50: [1], p99: [1] };
  for (const phase of phases) {
    const l = lat.get(phase) ?? { p50: [], p99: [] };
    console.log(
      `| ${phase} | ${fmt(median(l.p50))} ms (${fmt(Math.min(...l.p50))}) | ` +
        `${fmt(median(l.p99))} ms (${fmt(Math.min(...l.p99))}) | ` +
        `${(median(l.p50) / median(idle.p50)).toFixed(2)} | ${(median(l.p99) / median(idle.p99)).toFixed(2)} |`,
    );
  }
  console.log(`\nwhat the attackers got (status: count): ${attackers.join('; ')}`);
  console.log(
    '\ndestination policy cost: small GETs, 32 concurrent, median of the rounds (best)\n',
  );
  console.log('| measure | policy | allow everything | policy / allow everything |');
  console.log('|---|---:|---:|---:|');
  const row = (label: string, unit: string, m: Map<string, number[]>, higher: boolean) => {
    const a = m.get('policy') ?? [];
    const b = m.get('allow everything') ?? [];
    const best = (xs: number[]) => (higher ? Math.max(...xs) : Math.min(...xs));
    console.log(
      `| ${label} | ${fmt(median(a))} ${unit} (${fmt(best(a))}) | ${fmt(median(b))} ${unit} (${fmt(best(b))}) | ${(median(a) / median(b)).toFixed(3)} |`,
    );
  };
  row('small GETs', 'req/s', rate, true);
  row('proxy CPU time per small GET', 'µs', cpu, false);
  const cpuPerGet = median(cpu.get('policy') ?? [1]);
  console.log(
    `\nthe matcher alone: ${fmt(nsPerCheck)} ns per request to a public address (every default ` +
      `range walked), ${((nsPerCheck / 1000 / cpuPerGet) * 100).toFixed(2)}% of the proxy's CPU ` +
      `time per small GET; ${fmt(nsPerAddress)} ns per resolved address of a name, once per ` +
      'new connection',
  );
  console.log('\nevery round:');
  for (const phase of phases) {
    const l = lat.get(phase);
    console.log(
      `- ${phase}: p50 ${l?.p50.map(fmt).join(', ')} ms; p99 ${l?.p99.map(fmt).join(', ')} ms`,
    );
  }
  for (const c of columns) {
    console.log(
      `- ${c.name}: ${(rate.get(c.name) ?? []).map(fmt).join(', ')} req/s; ` +
        `${(cpu.get(c.name) ?? []).map(fmt).join(', ')} µs per GET`,
    );
  }
} finally {
  for (const p of programs) await p.stop();
  origin.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
