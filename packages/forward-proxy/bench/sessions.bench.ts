// What the gateway's user-name parameters cost, in alternating rounds of one run: small GETs
// (32 concurrent, kept-alive connections) through one gateway in front of two upstream proxies,
// the client authenticating as the plain user, as `USER-session-ID` (32 session ids, each held to
// one upstream), and as `USER-rotate-request` (each request of a connection to the next
// upstream, so no upstream connection is reused across requests of one client connection).
// Columns are the same gateway; only the user name differs. Reported as requests per second and
// the ratio to the plain user name.
//
// Run with `npm run bench:sessions` (after `npm run build`); BENCH_ROUNDS, BENCH_SECONDS and
// BENCH_SMOKE as in the proxy benchmark.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword, proxyServerPath } from '@proxy-op/forward-proxy';
import {
  fmt,
  load,
  loadLine,
  median,
  part,
  ROUNDS,
  SECONDS,
  startOrigin,
  startProgram,
} from './support.ts';

const GATEWAY = '127.0.210.40';
const UPSTREAMS = ['127.0.210.41', '127.0.210.42'];
const USER = 'bench-client';
const PASSWORD = 'bench-sessions-password';
const CONCURRENCY = 32;
const LOOPBACK = { allow: ['127.0.0.0/8:1-65535'] };

const dir = mkdtempSync(join(tmpdir(), 'forward-proxy-bench-sessions-'));
part('starting the origin, two upstreams and the gateway');
const origin = await startOrigin();
const upstreams = await Promise.all(
  UPSTREAMS.map((host, i) =>
    startProgram(proxyServerPath(), `up-${i}`, host, { egress: LOOPBACK, outgoingAddress: host }),
  ),
);
const parentsFile = join(dir, 'parents.json');
writeFileSync(
  parentsFile,
  JSON.stringify({
    upstreams: upstreams.map((u, i) => ({ name: `up-${i}`, url: `http://${u.host}:${u.port}` })),
  }),
);
const passwordFile = join(dir, 'passwd');
writeFileSync(passwordFile, `${USER}:${hashPassword(PASSWORD)}\n`, { mode: 0o600 });
const gateway = await startProgram(proxyServerPath(), 'gateway', GATEWAY, {
  egress: LOOPBACK,
  auth: { realm: 'bench', passwordFile },
  parents: { file: parentsFile },
});

/** The user names compared, each with how a request picks its own. */
const columns: { name: string; user: (n: number) => string }[] = [
  { name: 'plain user name', user: () => USER },
  { name: '`-session-ID` (32 ids)', user: (n) => `${USER}-session-s${n % CONCURRENCY}` },
  { name: '`-rotate-request`', user: () => `${USER}-rotate-request` },
];

/** One small GET through the gateway as `user`; resolves with the bytes read. */
function get(agent: Agent | false, user: string): Promise<number> {
  const authorization = `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: gateway.host,
        port: gateway.port,
        path: `http://127.0.0.1:${origin.http}/small`,
        headers: { 'proxy-authorization': authorization },
      },
      (res) => {
        let n = 0;
        res.on('data', (d: Buffer) => {
          n += d.length;
        });
        res.on('end', () =>
          res.statusCode === 200 ? resolve(n) : reject(new Error(`${user}: ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const rates = new Map<string, number[]>(columns.map((c) => [c.name, []]));
const loads: number[][] = [loadavg()];
try {
  // Every user name verified once before the rounds: the rounds measure the kept verifications.
  for (const c of columns) for (let i = 0; i < CONCURRENCY; i++) await get(false, c.user(i));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? columns : [...columns].reverse();
    for (const c of order) {
      part(`round ${round + 1}: small GETs, ${c.name}`);
      let n = 0;
      const column = {
        name: c.name,
        host: gateway.host,
        port: gateway.port,
        pid: gateway.child.pid,
        path: (p: string) => p,
        tunnels: false,
      };
      const r = await load(column, CONCURRENCY, (agent) => get(agent, c.user(n++)));
      rates.get(c.name)?.push(r.count / r.seconds);
    }
    loads.push(loadavg());
  }
} finally {
  await gateway.stop();
  for (const u of upstreams) await u.stop();
  origin.child.kill();
  rmSync(dir, { recursive: true, force: true });
}

const base = median(rates.get(columns[0]?.name ?? '') ?? []);
process.stdout.write(
  `\nThe gateway's user-name parameters: small GETs, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of ${SECONDS} s, medians\n`,
);
process.stdout.write(`${loadLine(loads)}\n`);
process.stdout.write('| user name | requests/s | vs plain user name |\n|---|---:|---:|\n');
for (const c of columns) {
  const r = median(rates.get(c.name) ?? []);
  process.stdout.write(`| ${c.name} | ${fmt(r)} | ${fmt(r / base)}x |\n`);
}
