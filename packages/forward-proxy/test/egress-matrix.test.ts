// Peers: the proxy program and the real Squid (Debian `squid`, run with the configuration
// @proxy-op/squid-config renders from the same policy), side by side in a network namespace the
// test creates, with real servers in it: a fake cloud metadata service on 169.254.169.254:80 (on
// the namespace's loopback), a loopback service, a service on the host's own address, a DNS
// server on the namespace's loopback (which `ip netns exec` makes both Node.js's resolver and
// Squid's read, through /etc/netns/<name>/resolv.conf), and a "public" origin in a second
// namespace behind a veth pair. One client asks both proxies the same matrix of requests.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { missingPeers, which } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyServerPath } from '../src/proxy-server.js';

const FAKE_TOKEN = 'AQAEAFAKE-METADATA-TOKEN-7c41';
const LOOPBACK_SECRET = 'SENTINEL-loopback-service-9b2d';
const NS = `pxm${process.pid}`;
const PUBLIC_NS = `${NS}p`;
const PROXY_PORT = 3128;
const SQUID_PORT = 3129;
/** The namespace's own (non-loopback) address, and the public origin's. */
const HOST_ADDRESS = '198.51.100.1';
const PUBLIC = '198.51.100.10';
const POLICY = { allow: ['127.0.0.1:8082'], deny: ['denied.test'] };

/** Why this suite cannot run here, or undefined. */
function unavailable(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'not root (network namespaces need it)';
  return missingPeers(['ip', 'squid']);
}

const reason = unavailable();
if (reason !== undefined && process.env.CI !== 'true') {
  console.warn(`skipping the destination matrix: ${reason}`);
}

/** The servers of the main namespace: metadata, loopback services, the host's address, DNS. */
const SERVERS = `
import { createServer } from 'node:http';
import { createSocket } from 'node:dgram';
const serve = (host, port, body) =>
  new Promise((r) => createServer((q, s) => s.end(body)).listen(port, host, r));
await serve('169.254.169.254', 80, ${JSON.stringify(FAKE_TOKEN)});
await serve('127.0.0.1', 8081, ${JSON.stringify(LOOPBACK_SECRET)});
await serve('127.0.0.1', 8082, 'allowed-service');
await serve('${HOST_ADDRESS}', 8083, 'host-address-service');
const NAMES = {
  'metadata.test': ['169.254.169.254'],
  'loopback.test': ['127.0.0.1'],
  'public.test': ['${PUBLIC}'],
  'denied.test': ['${PUBLIC}'],
  'mixed.test': ['${PUBLIC}', '127.0.0.1'],
};
const dns = createSocket('udp4');
dns.on('message', (q, from) => {
  let at = 12;
  const labels = [];
  while (q[at] !== 0) { labels.push(q.toString('latin1', at + 1, at + 1 + q[at])); at += q[at] + 1; }
  const type = q.readUInt16BE(at + 1);
  const question = q.subarray(12, at + 5);
  const known = NAMES[labels.join('.').toLowerCase()];
  const answers = known !== undefined && type === 1 ? known : [];
  const head = Buffer.alloc(12);
  q.copy(head, 0, 0, 2);
  head.writeUInt16BE(known === undefined ? 0x8183 : 0x8180, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(answers.length, 6);
  const records = answers.map((a) => {
    const r = Buffer.alloc(16);
    r.writeUInt16BE(0xc00c, 0); r.writeUInt16BE(1, 2); r.writeUInt16BE(1, 4);
    r.writeUInt32BE(60, 6); r.writeUInt16BE(4, 10);
    a.split('.').forEach((o, i) => { r[12 + i] = Number(o); });
    return r;
  });
  dns.send(Buffer.concat([head, question, ...records]), from.port, from.address);
});
await new Promise((r) => dns.bind(53, '127.0.0.1', r));
process.stdout.write('ready\\n');
`;

/** The public origin, in its own namespace: HTTP on 80, TCP echo on 443 and 8443. */
const PUBLIC_SERVERS = `
import { createServer } from 'node:http';
import { createServer as tcp } from 'node:net';
await new Promise((r) => createServer((q, s) => s.end('public-origin')).listen(80, '${PUBLIC}', r));
for (const port of [443, 8443]) {
  await new Promise((r) => tcp((s) => s.pipe(s)).listen(port, '${PUBLIC}', r));
}
process.stdout.write('ready\\n');
`;

/** The client: sends each request head to a proxy, and says what came back. */
const CLIENT = `
import { connect } from 'node:net';
const [port, ...lines] = JSON.parse(process.argv[1]);
const ask = (line) => new Promise((resolve) => {
  const s = connect({ host: '127.0.0.1', port });
  let got = '';
  const done = () => { s.destroy(); resolve(got); };
  s.setEncoding('latin1');
  s.on('data', (d) => {
    got += d;
    // A tunnel that opened stays open: its head is all there is to see.
    if (line.startsWith('CONNECT') && got.includes('\\r\\n\\r\\n') && / 200 /.test(got)) done();
  });
  s.on('error', () => done());
  s.on('close', () => resolve(got));
  s.setTimeout(15000, done);
  s.write(line + '\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n');
});
// Until the proxy answers at all.
for (let i = 0; i < 200 && (await ask('GET http://${PUBLIC}/ HTTP/1.1')) === ''; i++) {
  await new Promise((r) => setTimeout(r, 100));
}
const out = [];
for (const line of lines) out.push(await ask(line));
process.stdout.write(JSON.stringify(out));
`;

/** The rows: what is asked, and the status both proxies give (`self` is the proxy's own port). */
const ROWS: readonly (readonly [string, number])[] = [
  ['GET http://198.51.100.10/ HTTP/1.1', 200],
  ['GET http://public.test/ HTTP/1.1', 200],
  ['CONNECT 198.51.100.10:443 HTTP/1.1', 200],
  ['GET http://169.254.169.254/latest/api/token HTTP/1.1', 403],
  ['GET http://2852039166/latest/api/token HTTP/1.1', 403],
  ['GET http://0xa9fea9fe/latest/api/token HTTP/1.1', 403],
  ['GET http://[::ffff:169.254.169.254]/latest/api/token HTTP/1.1', 403],
  ['GET http://metadata.test/latest/api/token HTTP/1.1', 403],
  ['CONNECT 169.254.169.254:80 HTTP/1.1', 403],
  ['CONNECT metadata.test:443 HTTP/1.1', 403],
  ['GET http://127.0.0.1:8081/ HTTP/1.1', 403],
  ['GET http://127.1:8081/ HTTP/1.1', 403],
  ['GET http://0x7f.1:8081/ HTTP/1.1', 403],
  ['GET http://[::ffff:127.0.0.1]:8081/ HTTP/1.1', 403],
  ['GET http://loopback.test:8081/ HTTP/1.1', 403],
  ['GET http://mixed.test/ HTTP/1.1', 403],
  ['CONNECT 127.0.0.1:8081 HTTP/1.1', 403],
  ['CONNECT 198.51.100.10:8443 HTTP/1.1', 403],
  ['GET http://198.51.100.10:25/ HTTP/1.1', 403],
  ['GET http://127.0.0.1:self/ HTTP/1.1', 403],
  ['CONNECT 127.0.0.1:self HTTP/1.1', 403],
  ['GET http://denied.test/ HTTP/1.1', 403],
  ['GET http://127.0.0.1:8082/ HTTP/1.1', 200],
  ['CONNECT 127.0.0.1:8082 HTTP/1.1', 200],
];

/** Where Squid cannot give the same answer (the squid-config README lists it). */
const HOST_ADDRESS_ROW = `GET http://${HOST_ADDRESS}:8083/ HTTP/1.1`;

const run = (cmd: string, args: readonly string[]) => execFileSync(cmd, args, { stdio: 'pipe' });
const inNs = (ns: string, args: readonly string[]) => ['netns', 'exec', ns, ...args];

describe.runIf(reason === undefined || process.env.CI === 'true')(
  'one destination policy through the forward proxy and through Squid',
  () => {
    const children: ChildProcess[] = [];
    let dir: string;

    /** Spawns `args` in namespace `ns`; resolves once it prints `ready` (or `wait` is seen on stderr). */
    function start(ns: string, args: readonly string[], wait: RegExp): Promise<ChildProcess> {
      const child = spawn('ip', inNs(ns, args), { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let said = '';
      return new Promise((resolve, reject) => {
        const seen = (d: Buffer) => {
          said += d.toString();
          if (wait.test(said)) resolve(child);
        };
        child.stdout?.on('data', seen);
        child.stderr?.on('data', seen);
        child.once('exit', (code) =>
          reject(new Error(`${args.join(' ')} exited ${code}: ${said}`)),
        );
      });
    }

    /** What one proxy answers to every line, from a client in the namespace. */
    function askAll(port: number, lines: readonly string[]): string[] {
      const out = execFileSync(
        'ip',
        inNs(NS, [
          process.execPath,
          '--input-type=module',
          '-e',
          CLIENT,
          JSON.stringify([port, ...lines]),
        ]),
        { encoding: 'utf8', timeout: 120_000 },
      );
      return JSON.parse(out) as string[];
    }

    beforeAll(async () => {
      if (reason !== undefined) throw new Error(`the destination matrix cannot run: ${reason}`);
      dir = mkdtempSync(join(tmpdir(), 'egress-matrix-'));
      chmodSync(dir, 0o755);
      run('ip', ['netns', 'add', NS]);
      run('ip', ['netns', 'add', PUBLIC_NS]);
      run('ip', ['-n', NS, 'link', 'set', 'lo', 'up']);
      run('ip', ['-n', PUBLIC_NS, 'link', 'set', 'lo', 'up']);
      run('ip', ['-n', NS, 'addr', 'add', '169.254.169.254/32', 'dev', 'lo']);
      run('ip', [
        '-n',
        NS,
        'link',
        'add',
        'v0',
        'type',
        'veth',
        'peer',
        'name',
        'v1',
        'netns',
        PUBLIC_NS,
      ]);
      run('ip', ['-n', NS, 'addr', 'add', `${HOST_ADDRESS}/24`, 'dev', 'v0']);
      run('ip', ['-n', PUBLIC_NS, 'addr', 'add', `${PUBLIC}/24`, 'dev', 'v1']);
      run('ip', ['-n', NS, 'link', 'set', 'v0', 'up']);
      run('ip', ['-n', PUBLIC_NS, 'link', 'set', 'v1', 'up']);
      mkdirSync(`/etc/netns/${NS}`, { recursive: true });
      writeFileSync(
        `/etc/netns/${NS}/resolv.conf`,
        'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n',
      );

      const node = process.execPath;
      await start(NS, [node, '--input-type=module', '-e', SERVERS], /ready/);
      await start(PUBLIC_NS, [node, '--input-type=module', '-e', PUBLIC_SERVERS], /ready/);

      const config = join(dir, 'proxy.json');
      writeFileSync(
        config,
        JSON.stringify({
          name: 'matrix',
          address: '127.0.0.1',
          port: PROXY_PORT,
          allowedSources: ['127.0.0.1/32'],
          egress: POLICY,
        }),
      );
      await start(NS, [node, proxyServerPath(), '--config', config], /listening on/);

      const squidDir = join(dir, 'squid');
      mkdirSync(squidDir);
      chownSync(squidDir, 65534, 65534);
      const conf = join(squidDir, 'squid.conf');
      writeFileSync(
        conf,
        `${renderSquidConfig({
          port: SQUID_PORT,
          listenAddress: '127.0.0.1',
          allowedSources: ['127.0.0.1/32'],
          egress: POLICY,
          paths: { accessLog: join(squidDir, 'access.log'), cacheLog: join(squidDir, 'cache.log') },
        })}cache_effective_user nobody\n`,
      );
      start(NS, [which('squid') as string, '-N', '-f', conf], /ready/).catch(() => {});
    }, 120_000);

    afterAll(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      for (const ns of [NS, PUBLIC_NS]) {
        try {
          run('ip', ['netns', 'del', ns]);
        } catch {
          // not made
        }
      }
      rmSync(`/etc/netns/${NS}`, { recursive: true, force: true });
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('gives the same status to every row, and no byte of the token or the loopback service', () => {
      const lines = (self: number) => [
        ...ROWS.map(([line]) => line.replace('self', String(self))),
        HOST_ADDRESS_ROW,
      ];
      const status = (answer: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1] ?? 0);
      const fromProxy = askAll(PROXY_PORT, lines(PROXY_PORT));
      const fromSquid = askAll(SQUID_PORT, lines(SQUID_PORT));
      const table = ROWS.map(([line, want], i) => ({
        line,
        want,
        proxy: status(fromProxy[i] ?? ''),
        squid: status(fromSquid[i] ?? ''),
      }));
      console.info(table.map((r) => `${r.line}: proxy ${r.proxy}, squid ${r.squid}`).join('\n'));
      for (const r of table) {
        expect([r.line, r.proxy]).toEqual([r.line, r.want]);
        expect([r.line, r.squid]).toEqual([r.line, r.want]);
      }
      for (const answer of [...fromProxy, ...fromSquid]) {
        expect(answer).not.toContain(FAKE_TOKEN);
        expect(answer).not.toContain(LOOPBACK_SECRET);
      }
      // The refusals name their rule, never an address.
      expect(fromProxy[3]).toMatch(/\r\n\r\nproxy-op: destination refused \(link-local\)\n$/);
      expect(fromProxy[15]).toMatch(/\(loopback\)\n$/);
      expect(fromProxy[19]).toMatch(/\(own-address\)\n$/);
      // The known difference: the host's own address (not loopback) is refused by the proxy,
      // which reads the host's interfaces; Squid, rendered before they are known, serves it.
      const host = fromProxy.length - 1;
      expect(status(fromProxy[host] ?? '')).toBe(403);
      expect(fromProxy[host]).toMatch(/\(host-address\)\n$/);
      expect(status(fromSquid[host] ?? '')).toBe(200);
      expect(fromSquid[host]).toContain('host-address-service');
    }, 180_000);
  },
);
