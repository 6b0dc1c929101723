// Peers: the proxy program spawned as a child process (and, for the gateway's metrics, in
// process), real HTTP and TCP origins and raw-socket clients, all on 127.0.0.0/8: the
// destination policy's defaults and allow list, the proxy's own address and the self-loop, the
// sources judged as they connect, the per-source bound, the health-only sources, the bounds on
// credential checks, and what the access log keeps of a refused target.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicAuthorization } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeHealth } from '../src/health.js';
import { hashPassword } from '../src/index.js';
import { startForwardProxy } from '../src/proxy.js';
import {
  eventually,
  fdCount,
  freePort,
  killAllSpawned,
  listen,
  type RunningProxy,
  rawExchange,
  startProgram,
  stopProgram,
  tunnel,
  viaProxy,
} from './support.js';

/** What the loopback service answers: no byte of it may reach a client the policy refuses. */
const SECRET = 'SENTINEL-loopback-service-5e1f';

let service: Server;
let servicePort: number;
let requestsSeen = 0;
let dir: string;

beforeAll(async () => {
  service = createServer((_req, res) => {
    requestsSeen++;
    res.end(SECRET);
  });
  servicePort = await listen(service);
  dir = await mkdtemp(join(tmpdir(), 'forward-proxy-front-door-'));
});
afterAll(async () => {
  service?.close();
  await killAllSpawned();
  await rm(dir, { recursive: true, force: true });
});

/** One request head through the proxy on a raw socket; what came back. */
function ask(p: { address: string; port: number }, head: string, localAddress = '127.0.0.1') {
  return rawExchange(p.address, p.port, `${head}\r\n\r\n`, { localAddress, timeoutMs: 10_000 });
}

describe('the destination policy, by default', () => {
  let proxy: RunningProxy;
  beforeAll(async () => {
    const address = '127.0.7.10';
    proxy = await startProgram({ address, port: await freePort(address), egress: {} });
  });
  afterAll(() => stopProgram(proxy));

  it('refuses the host loopback in every spelling, plain and CONNECT, naming the rule only', async () => {
    const seen = requestsSeen;
    for (const host of [
      '127.0.0.1',
      '2130706433',
      '127.1',
      '0x7f.1',
      '0177.0.0.1',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[::127.0.0.1]',
      '[64:ff9b::127.0.0.1]',
      'localhost',
    ]) {
      const a = await ask(proxy, `GET http://${host}:${servicePort}/ HTTP/1.1\r\nHost: x`);
      expect(a, host).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
      expect(a, host).toMatch(/\r\n\r\nproxy-op: destination refused \(loopback\)\n$/);
      expect(a).not.toContain(SECRET);
      const t = await ask(proxy, `CONNECT ${host}:${servicePort} HTTP/1.1\r\nHost: x`);
      expect(t, host).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
      // A name is judged by its port before it is resolved: CONNECT to this one is not to 443.
      const rule = host === 'localhost' ? 'port' : 'loopback';
      expect(t, host).toContain(`proxy-op: destination refused (${rule})`);
    }
    expect(requestsSeen).toBe(seen);
  });

  it('refuses the metadata, private and other ranges, and ports, without an address in the answer', async () => {
    const cases: [string, string][] = [
      ['GET http://169.254.169.254/latest/meta-data/ HTTP/1.1', 'link-local'],
      ['GET http://2852039166/ HTTP/1.1', 'link-local'],
      ['GET http://[::ffff:169.254.169.254]/ HTTP/1.1', 'link-local'],
      ['GET http://[fd00:ec2::254]/ HTTP/1.1', 'metadata'],
      ['GET http://10.1.2.3/ HTTP/1.1', 'private'],
      ['GET http://192.168.0.1:8080/ HTTP/1.1', 'private'],
      ['GET http://0.0.0.0:8080/ HTTP/1.1', 'this-network'],
      ['GET http://224.0.0.1/ HTTP/1.1', 'multicast'],
      ['GET http://example.invalid:25/ HTTP/1.1', 'port'],
      ['CONNECT 169.254.169.254:80 HTTP/1.1', 'link-local'],
      ['CONNECT example.invalid:22 HTTP/1.1', 'port'],
      ['CONNECT 192.0.2.1:8443 HTTP/1.1', 'port'],
    ];
    for (const [line, rule] of cases) {
      const a = await ask(proxy, `${line}\r\nHost: x`);
      expect(a, line).toMatch(/^HTTP\/1\.1 403 /);
      const body = a.slice(a.indexOf('\r\n\r\n') + 4);
      expect(body, line).toBe(`proxy-op: destination refused (${rule})\n`);
    }
  });

  it('writes the target of a refused request to the log without its user info or query', async () => {
    const a = await ask(
      proxy,
      `GET http://bob:hunter2-secret@127.0.0.1:${servicePort}/p?token=abc HTTP/1.1\r\nHost: x`,
    );
    expect(a).toMatch(/^HTTP\/1\.1 403 /);
    await eventually(() => readFileSync(proxy.accessLog, 'utf8').includes(`${servicePort}/p"`));
    const log = readFileSync(proxy.accessLog, 'utf8');
    expect(log).toContain(`"target":"http://127.0.0.1:${servicePort}/p"`);
    expect(log).not.toContain('hunter2');
    expect(log).not.toContain('token=abc');
  });
});

describe('an allow entry', () => {
  it('admits its address and port, for plain HTTP and CONNECT, and nothing beside it', async () => {
    const address = '127.0.7.11';
    const proxy = await startProgram({
      address,
      port: await freePort(address),
      egress: { allow: [`127.0.0.1:${servicePort}`] },
    });
    try {
      const ok = await viaProxy(proxy, `http://127.0.0.1:${servicePort}/`);
      expect(ok).toEqual({ status: 200, body: SECRET });
      const t = await tunnel(proxy, `127.0.0.1:${servicePort}`);
      expect(t.status).toBe(200);
      t.socket.destroy();
      const other = await ask(
        proxy,
        `GET http://127.0.0.1:${servicePort + 1}/ HTTP/1.1\r\nHost: x`,
      );
      expect(other).toMatch(/^HTTP\/1\.1 403 [\s\S]*\(loopback\)\n$/);
    } finally {
      await stopProgram(proxy);
    }
  });

  it('a bad policy stops the program, naming the entry', async () => {
    const address = '127.0.7.12';
    await expect(
      startProgram({ address, port: await freePort(address), egress: { allow: ['10.0.0.0/33'] } }),
    ).rejects.toThrow(/egress\.allow\[0\]: "10\.0\.0\.0\/33" is not a CIDR, address or host name/);
  });
});

describe('the proxy itself', () => {
  let proxy: RunningProxy;
  const address = '127.0.7.13';
  beforeAll(async () => {
    // Every loopback port allowed: the proxy's own address and port stay refused all the same.
    proxy = await startProgram({ address, port: await freePort(address) });
  });
  afterAll(() => stopProgram(proxy));

  it('is refused before it is dialled, plain and CONNECT, in any spelling', async () => {
    for (const line of [
      `GET http://${address}:${proxy.port}/healthz HTTP/1.1`,
      `GET http://[::ffff:${address}]:${proxy.port}/ HTTP/1.1`,
      `CONNECT ${address}:${proxy.port} HTTP/1.1`,
      `CONNECT 0.0.0.0:${proxy.port} HTTP/1.1`,
    ]) {
      const a = await ask(proxy, `${line}\r\nHost: x`);
      expect(a, line).toMatch(/^HTTP\/1\.1 403 /);
      expect(a, line).toContain('(own-address)');
    }
  });

  it('one write of 1,000 pipelined CONNECTs to itself: descriptors stay bounded, others are served', async () => {
    const before = fdCount(proxy.pid);
    const heads = `CONNECT ${address}:${proxy.port} HTTP/1.1\r\nHost: ${address}\r\n\r\n`.repeat(
      1000,
    );
    const attackers: Socket[] = [];
    const answers: Promise<string>[] = [];
    for (let i = 0; i < 10; i++) {
      const s = connect({ host: address, port: proxy.port, localAddress: '127.0.0.1' });
      attackers.push(s);
      answers.push(
        new Promise((resolve) => {
          let got = '';
          s.setEncoding('latin1');
          s.on('data', (d: string) => {
            got += d;
          });
          s.on('error', () => {});
          s.on('close', () => resolve(got));
        }),
      );
      s.write(heads);
    }
    let peak = 0;
    const sampling = setInterval(() => {
      peak = Math.max(peak, fdCount(proxy.pid));
    }, 5);
    try {
      // Meanwhile another client is served.
      const served = await viaProxy(proxy, `http://127.0.0.1:${servicePort}/`);
      expect(served).toEqual({ status: 200, body: SECRET });
      const got = await Promise.all(answers);
      for (const g of got) {
        // The first CONNECT is refused and the connection ends; the rest is never read.
        expect(g).toMatch(/^HTTP\/1\.1 403 [\s\S]*\(own-address\)\n$/);
      }
    } finally {
      clearInterval(sampling);
      for (const s of attackers) s.destroy();
    }
    expect(peak).toBeLessThan(before + 40);
    await eventually(() => fdCount(proxy.pid) <= before + 2, 10_000);
  });
});

describe('sources, judged as they connect', () => {
  let proxy: RunningProxy;
  const address = '127.0.7.14';
  beforeAll(async () => {
    proxy = await startProgram({
      address,
      port: await freePort(address),
      allowedSources: ['127.0.0.1/32', '127.0.0.2/32'],
      healthSources: ['127.0.7.99/32'],
      limits: { maxConnectionsPerSource: 5, maxConnections: 20 },
    });
  });
  afterAll(() => stopProgram(proxy));

  /** Opens a connection from `from`; resolves when it is closed, with what it read. */
  function hold(from: string, send: string): { socket: Socket; closed: Promise<string> } {
    const socket = connect({ host: address, port: proxy.port, localAddress: from });
    const closed = new Promise<string>((resolve) => {
      let got = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => {
        got += d;
      });
      socket.on('error', () => {});
      socket.on('close', () => resolve(got));
    });
    socket.on('connect', () => socket.write(send));
    return { socket, closed };
  }

  it('closes a refused source at once, unanswered, whatever it sends, while allowed clients are served', async () => {
    const outside = Array.from({ length: 40 }, (_, i) =>
      hold(
        '127.0.7.66',
        i % 2 === 0 ? 'GET http://127.0.0.1/ HT' : 'GET /healthz HTTP/1.1\r\n\r\n',
      ),
    );
    const served = await viaProxy(
      { address, port: proxy.port },
      `http://127.0.0.1:${servicePort}/`,
    );
    expect(served).toEqual({ status: 200, body: SECRET });
    const got = await Promise.all(outside.map((o) => o.closed));
    expect(got.every((g) => g === '')).toBe(true);
    expect(outside.every((o) => o.socket.bytesRead === 0)).toBe(true);
  });

  it('holds one source to its share of the connections; another source is served', async () => {
    const mine = Array.from({ length: 5 }, () => hold('127.0.0.2', 'GET http://127.0.0.1/ HT'));
    await Promise.all(mine.map((m) => new Promise((r) => m.socket.once('connect', r))));
    await new Promise((r) => setTimeout(r, 300)); // the proxy has accepted all five
    let sixthClosed = false;
    const sixth = hold('127.0.0.2', '');
    void sixth.closed.then(() => {
      sixthClosed = true;
    });
    await eventually(() => sixthClosed, 5_000);
    // The five it holds are still open: only the one past the bound was closed.
    expect(mine.every((m) => !m.socket.destroyed && m.socket.readyState === 'open')).toBe(true);
    const other = await viaProxy(
      { address, port: proxy.port },
      `http://127.0.0.1:${servicePort}/`,
      { localAddress: '127.0.0.1' },
    );
    expect(other.status).toBe(200);
    for (const m of mine) m.socket.destroy();
  });

  it('lets a health-only source ask /healthz and nothing else; others learn nothing', async () => {
    const health = await ask(proxy, 'GET /healthz HTTP/1.1\r\nHost: x', '127.0.7.99');
    expect(health).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*X-Proxy-Op-Instance: under-test\r\n/);
    const forward = await ask(
      proxy,
      `GET http://127.0.0.1:${servicePort}/ HTTP/1.1\r\nHost: x`,
      '127.0.7.99',
    );
    expect(forward).toMatch(/^HTTP\/1\.1 403 /);
    expect(forward).not.toContain(SECRET);
    // Closed unanswered (a reset, when its request was already there to be thrown away).
    expect(await ask(proxy, 'GET /healthz HTTP/1.1\r\nHost: x', '127.0.7.98')).toMatch(
      /^(|<reset>)$/,
    );
    // probeHealth asks from the health source it is given; from elsewhere it learns nothing.
    expect(
      await probeHealth('under-test', address, proxy.port, 2_000, undefined, '127.0.7.99'),
    ).toBe(true);
    expect(
      await probeHealth('under-test', address, proxy.port, 2_000, undefined, '127.0.7.98'),
    ).toBe(false);
  });
});

describe('credential checks', () => {
  let proxy: RunningProxy;
  const address = '127.0.7.15';
  const alice = { user: 'alice', password: 'SENTINEL-front-door-pass' };
  beforeAll(async () => {
    const passwordFile = join(dir, 'passwd');
    await writeFile(passwordFile, `alice:${hashPassword(alice.password)}\n`);
    proxy = await startProgram({
      address,
      port: await freePort(address),
      allowedSources: ['127.0.0.1/32', '127.0.0.2/32'],
      auth: { realm: 'front', passwordFile },
      limits: { maxAuthFailures: 4, authFailureRefillMs: 60_000 },
    });
  });
  afterAll(() => stopProgram(proxy));

  const get = (credential: { user: string; password: string }, from: string) =>
    ask(
      proxy,
      `GET http://127.0.0.1:${servicePort}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basicAuthorization(credential)}`,
      from,
    );

  it('refuses a header over the bound, then bounds a failing source with 429, not the others', async () => {
    const long = await get({ user: 'alice', password: 'x'.repeat(11_500) }, '127.0.0.2');
    expect(long).toMatch(/^HTTP\/1\.1 407 /);
    for (let i = 0; i < 3; i++) {
      expect(await get({ user: 'alice', password: `wrong-${i}` }, '127.0.0.2')).toMatch(
        /^HTTP\/1\.1 407 /,
      );
    }
    const limited = await get({ user: 'alice', password: 'wrong-again' }, '127.0.0.2');
    expect(limited).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
    expect(limited).toMatch(/\r\nRetry-After: \d+\r\n/);
    // The right credential from the bounded source waits too; from another source it gets through.
    expect(await get(alice, '127.0.0.2')).toMatch(/^HTTP\/1\.1 429 /);
    const ok = await get(alice, '127.0.0.1');
    expect(ok).toMatch(/^HTTP\/1\.1 200 /);
    expect(ok).toContain(SECRET);
  });
});

describe("the gateway's metrics", () => {
  it('ask for the gateway credential when it has one', async () => {
    const passwordFile = join(dir, 'gw-passwd');
    const carol = { user: 'carol', password: 'SENTINEL-gateway-metrics' };
    await writeFile(passwordFile, `carol:${hashPassword(carol.password)}\n`);
    const gw = await startForwardProxy({
      name: 'gw',
      address: '127.0.7.16',
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      auth: { realm: 'gw', passwordFile },
      parents: { upstreams: [{ name: 'p1', url: 'http://127.0.7.17:9' }] },
    });
    try {
      const bare = await ask(gw.address, 'GET /metrics HTTP/1.1\r\nHost: x');
      expect(bare).toMatch(/^HTTP\/1\.1 407 /);
      expect(bare).not.toContain('proxy_op_');
      const ok = await ask(
        gw.address,
        `GET /metrics HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basicAuthorization(carol)}\r\nConnection: close`,
      );
      expect(ok).toMatch(/^HTTP\/1\.1 200 /);
      expect(ok).toContain('p1');
      // A gateway does not dial destinations, but refuses what it can see before resolution.
      const meta = await ask(
        gw.address,
        `GET http://169.254.169.254/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basicAuthorization(carol)}`,
      );
      expect(meta).toMatch(/^HTTP\/1\.1 403 [\s\S]*\(link-local\)\n$/);
    } finally {
      await gw.close();
    }
  });
});
