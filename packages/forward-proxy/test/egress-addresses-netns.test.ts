// Peers: the proxy program, as a proxy and as a gateway, in a network namespace the test creates,
// with a /64 routed to the namespace's loopback as local (`ip -6 route add local
// 2001:db8:1::/64 dev lo` and `net.ipv6.ip_nonlocal_bind=1`: every address in it can be a
// source, as on a cloud server given a /64) and an origin on a veth interface of the namespace (2001:db8:2::1 and 192.0.2.1) that
// answers every request, and every tunnel, with the source address it saw. Names resolve through
// the namespace's own hosts file (/etc/netns/<name>/hosts, which `ip netns exec` mounts).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '@proxy-op/htpasswd';
import { missingPeers } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyServerPath } from '../src/proxy-server.js';

const NS = `pxa${process.pid}`;
const PREFIX = '2001:db8:1::/64';
const ORIGIN6 = '2001:db8:2::1';
const ORIGIN4 = '192.0.2.1';
const PROXY_PORT = 3128;
const GATEWAY_PORT = 3129;
const SESSIONS_PORT = 3130;

/** Why this suite cannot run here, or undefined. */
function unavailable(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'not root (network namespaces need it)';
  return missingPeers(['ip']);
}

const reason = unavailable();
if (reason !== undefined && process.env.CI !== 'true') {
  console.warn(`skipping the egress addresses in a namespace: ${reason}`);
}

/**
 * The origin: HTTP on port 80 and a TCP service on 443 (it writes the source and closes), both
 * families, and a stand-in parent proxy on [2001:db8:2::1]:8080 that answers absolute-form
 * requests and CONNECT alike with the source it saw. The origin closes each HTTP connection
 * (each request a connection of its own); the parent keeps them open, as a real one does.
 */
const ORIGIN = `
import { createServer } from 'node:http';
import { createServer as tcp } from 'node:net';
const listen = (server, port, host) => new Promise((r) => server.listen(port, host, r));
for (const host of ['${ORIGIN6}', '${ORIGIN4}']) {
  await listen(createServer((q, s) => { s.setHeader('connection', 'close'); s.end(q.socket.remoteAddress); }), 80, host);
  await listen(tcp((s) => s.end(s.remoteAddress)), 443, host);
}
const parent = createServer((q, s) => s.end(q.socket.remoteAddress));
parent.on('connect', (q, s) => s.end('HTTP/1.1 200 OK\\r\\n\\r\\n' + s.remoteAddress));
await listen(parent, 8080, '${ORIGIN6}');
process.stdout.write('ready\\n');
`;

/**
 * The client: each request of the list on a connection of its own, to the proxy on the port it
 * names, a GET of a URL or a CONNECT to a host and port (then what the tunnel carries back),
 * with an `x-proxy-op-session` field when it gives a session, or a `Proxy-Authorization` when it
 * gives a user name and password. Prints the answers as JSON.
 */
const CLIENT = `
import { request } from 'node:http';
const asks = JSON.parse(process.argv[1]);
const ask = ({ port, get, connect, session, user }) => new Promise((resolve) => {
  const headers = session === undefined ? {} : { 'x-proxy-op-session': session };
  if (user !== undefined) headers['proxy-authorization'] = 'Basic ' + Buffer.from(user).toString('base64');
  const req = request({ host: '127.0.0.1', port, method: get ? 'GET' : 'CONNECT', path: get ?? connect, headers, agent: false });
  req.on('response', (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d) => { body += d; });
    res.on('end', () => resolve(res.statusCode === 200 ? body : res.statusCode + ' ' + body));
  });
  req.on('connect', (res, socket, head) => {
    let body = head.toString();
    socket.setEncoding('utf8');
    socket.on('data', (d) => { body += d; });
    socket.on('close', () => resolve(body));
  });
  req.on('error', (err) => resolve('error ' + err.code));
  req.end();
});
const out = [];
for (const a of asks) out.push(await ask(a));
process.stdout.write(JSON.stringify(out));
`;

const run = (cmd: string, args: readonly string[]) => execFileSync(cmd, args, { stdio: 'pipe' });

/** An IPv6 address in 2001:db8:1::/64 as the kernel and Node.js write it. */
const IN_PREFIX = /^2001:db8:1:(0:)?[0-9a-f:]+$/;

interface Ask {
  readonly port: number;
  readonly get?: string;
  readonly connect?: string;
  readonly session?: string;
  /** `user:password`, sent as Basic proxy authorization. */
  readonly user?: string;
}

describe.runIf(reason === undefined || process.env.CI === 'true')(
  'egress.addresses: an IPv6 /64 in a network namespace',
  () => {
    const children: ChildProcess[] = [];
    let dir: string;

    /** Spawns `args` in the namespace; resolves once it prints `wait`. */
    function start(args: readonly string[], wait: RegExp): Promise<ChildProcess> {
      const child = spawn('ip', ['netns', 'exec', NS, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
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

    /** Starts the proxy program in the namespace with `config` (and `extra` files). */
    function startProgram(name: string, config: Record<string, unknown>) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ name, address: '127.0.0.1', ...config }));
      return start([process.execPath, proxyServerPath(), '--config', file], /listening on/);
    }

    /** What the client in the namespace got for each of `asks`. */
    function askAll(asks: readonly Ask[]): string[] {
      const out = execFileSync(
        'ip',
        [
          'netns',
          'exec',
          NS,
          process.execPath,
          '--input-type=module',
          '-e',
          CLIENT,
          JSON.stringify(asks),
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      return JSON.parse(out) as string[];
    }

    beforeAll(async () => {
      if (reason !== undefined) throw new Error(`the egress addresses cannot run: ${reason}`);
      dir = mkdtempSync(join(tmpdir(), 'egress-addresses-'));
      chmodSync(dir, 0o755);
      run('ip', ['netns', 'add', NS]);
      run('ip', ['-n', NS, 'link', 'set', 'lo', 'up']);
      // What a host given a /64 needs: the prefix routed to it as local, and leave to bind an
      // address of it that no interface holds.
      run('ip', ['-n', NS, '-6', 'route', 'add', 'local', PREFIX, 'dev', 'lo']);
      run('ip', ['netns', 'exec', NS, 'sh', '-c', 'echo 1 > /proc/sys/net/ipv6/ip_nonlocal_bind']);
      run('ip', ['-n', NS, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1']);
      run('ip', ['-n', NS, 'addr', 'add', `${ORIGIN6}/64`, 'dev', 'v0', 'nodad']);
      run('ip', ['-n', NS, 'addr', 'add', `${ORIGIN4}/24`, 'dev', 'v0']);
      run('ip', ['-n', NS, 'link', 'set', 'v0', 'up']);
      run('ip', ['-n', NS, 'link', 'set', 'v1', 'up']);
      mkdirSync(`/etc/netns/${NS}`, { recursive: true });
      writeFileSync(
        `/etc/netns/${NS}/hosts`,
        [
          '127.0.0.1 localhost',
          `${ORIGIN6} origin6.test dual.test`,
          `${ORIGIN4} origin4.test dual.test`,
          '',
        ].join('\n'),
      );
      await start([process.execPath, '--input-type=module', '-e', ORIGIN], /ready/);

      const egress = {
        allow: ['2001:db8:2::/64', '192.0.2.0/24'],
        addresses: PREFIX,
      };
      await startProgram('proxy', { port: PROXY_PORT, allowedSources: ['127.0.0.1/32'], egress });
      const passwordFile = join(dir, 'passwd');
      writeFileSync(passwordFile, `alice:${hashPassword('secret')}\n`, { mode: 0o600 });
      await startProgram('sessions', {
        port: SESSIONS_PORT,
        allowedSources: ['127.0.0.1/32'],
        auth: { realm: 'sessions', passwordFile },
        egress,
      });
      const parents = join(dir, 'parents.json');
      writeFileSync(
        parents,
        JSON.stringify({ upstreams: [{ name: 'p', url: `http://[${ORIGIN6}]:8080` }] }),
      );
      await startProgram('gateway', {
        port: GATEWAY_PORT,
        allowedSources: ['127.0.0.1/32'],
        egress: { addresses: PREFIX },
        parents: { file: parents, session: 'header' },
      });
    }, 120_000);

    afterAll(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      try {
        run('ip', ['netns', 'del', NS]);
      } catch {
        // not made
      }
      rmSync(`/etc/netns/${NS}`, { recursive: true, force: true });
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('without a session, each connection leaves from an address of its own in the /64', () => {
      const n = 20;
      const answers = askAll([
        ...Array.from({ length: n }, () => ({ port: PROXY_PORT, get: `http://[${ORIGIN6}]/` })),
        ...Array.from({ length: n }, () => ({ port: PROXY_PORT, connect: `[${ORIGIN6}]:443` })),
      ]);
      const plain = answers.slice(0, n);
      const tunnels = answers.slice(n);
      for (const a of answers) expect(a).toMatch(IN_PREFIX);
      expect(new Set(plain).size).toBe(n);
      expect(new Set(tunnels).size).toBe(n);
    }, 120_000);

    it('a name leaves from the /64 when it has an IPv6 address, else from the source the system picks', () => {
      const [named, dual, tunnelled, v4, v4Tunnel] = askAll([
        { port: PROXY_PORT, get: 'http://origin6.test/' },
        { port: PROXY_PORT, get: 'http://dual.test/' },
        { port: PROXY_PORT, connect: 'dual.test:443' },
        { port: PROXY_PORT, get: 'http://origin4.test/' },
        { port: PROXY_PORT, connect: `${ORIGIN4}:443` },
      ]);
      expect(named).toMatch(IN_PREFIX);
      expect(dual).toMatch(IN_PREFIX);
      expect(tunnelled).toMatch(IN_PREFIX);
      // IPv4 only: the prefix cannot reach it, and the system picks the source.
      expect(v4).toBe(ORIGIN4);
      expect(v4Tunnel).toBe(ORIGIN4);
    }, 120_000);

    it('through the proxy, 20 session ids of the user name leave from 20 addresses, one session from one', () => {
      const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`);
      const asks: Ask[] = [];
      for (let round = 0; round < 2; round++) {
        for (const s of sessions) {
          const user = `alice-session-${s}:secret`;
          asks.push({ port: SESSIONS_PORT, get: `http://[${ORIGIN6}]/`, session: s, user });
          asks.push({ port: SESSIONS_PORT, connect: 'origin6.test:443', session: s, user });
        }
      }
      // The session goes in the user name only: the proxy has no parents to read the header.
      const answers = askAll(asks.map(({ session: _, ...a }) => a));
      for (const a of answers) expect(a).toMatch(IN_PREFIX);
      const bySession = new Map<string, Set<string>>();
      asks.forEach((a, i) => {
        const seen = bySession.get(a.session as string) ?? new Set<string>();
        seen.add(answers[i] as string);
        bySession.set(a.session as string, seen);
      });
      for (const s of sessions) expect([s, (bySession.get(s) as Set<string>).size]).toEqual([s, 1]);
      const addresses = new Set(sessions.map((s) => [...(bySession.get(s) as Set<string>)][0]));
      expect(addresses.size).toBe(20);
    }, 120_000);

    it('through a gateway, 20 session ids (by header) leave from 20 addresses, one session from one', () => {
      const sessions = Array.from({ length: 20 }, (_, i) => `session-${i}`);
      const asks: Ask[] = [];
      for (let round = 0; round < 3; round++) {
        for (const session of sessions) {
          asks.push({ port: GATEWAY_PORT, get: 'http://origin6.test/', session });
        }
      }
      for (const session of sessions) {
        asks.push({ port: GATEWAY_PORT, connect: 'origin6.test:443', session });
      }
      const answers = askAll(asks);
      for (const a of answers) expect(a).toMatch(IN_PREFIX);
      const bySession = new Map<string, Set<string>>();
      asks.forEach((a, i) => {
        const seen = bySession.get(a.session as string) ?? new Set<string>();
        seen.add(answers[i] as string);
        bySession.set(a.session as string, seen);
      });
      for (const s of sessions) expect([s, (bySession.get(s) as Set<string>).size]).toEqual([s, 1]);
      const addresses = new Set(sessions.map((s) => [...(bySession.get(s) as Set<string>)][0]));
      expect(addresses.size).toBe(20);
    }, 120_000);
  },
);
