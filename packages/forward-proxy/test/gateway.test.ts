// Peers: real upstream proxies of two kinds behind the gateway (this package's proxy, each on
// an address of its own with its own credential, and the real Squid with basic_ncsa_auth),
// a real origin and a real TCP echo target; clients are node:http. All on 127.0.0.0/8.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { describeWithPeers, type RunningSquid, startSquid } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  type ForwardProxy,
  hashPassword,
  type ParentProxy,
  startForwardProxy,
} from '../src/index.js';
import { proxyServerPath } from '../src/proxy-server.js';
import {
  eventually,
  freePort,
  LOOPBACK_ORIGINS,
  listen,
  startProgram,
  stopProgram,
} from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

const CLIENT = '127.0.0.1';
const GATEWAY = '127.0.20.1';
const UP_A = '127.0.20.11';
const UP_B = '127.0.20.12';
const UP_C = '127.0.20.13';
const SQUID = '127.0.20.14';
const GATE_USER = { user: 'client', password: 'SENTINEL-gate-3f1c' };
const UP_PASSWORDS: Record<string, string> = {
  a: 'SENTINEL-up-a-77e2',
  b: 'SENTINEL-up-b-91d0',
  c: 'SENTINEL-up-c-05ab',
  squid: 'SENTINEL-up-squid-4c1e',
};
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const GATE_AUTH = basic(GATE_USER.user, GATE_USER.password);

interface Answer {
  status: number;
  upstream: string | undefined;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** An answer read to its end. */
function readAnswer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      body += d;
    });
    res.on('error', reject);
    res.on('end', () =>
      resolve({
        status: res.statusCode ?? 0,
        upstream: res.headers['x-proxy-op-upstream'] as string | undefined,
        body,
        headers: res.headers,
      }),
    );
  });
}

/** One request through `proxy` on a connection of its own. */
function get(
  proxy: { address: string; port: number },
  url: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      path: url,
      agent: false,
      headers: { 'proxy-authorization': GATE_AUTH, ...headers },
    });
    req.on('response', (res) => {
      readAnswer(res).then(resolve, reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A CONNECT through `proxy`: the answer's status and upstream field, and the socket when open. */
function connectVia(
  proxy: { address: string; port: number },
  target: string,
  auth = GATE_AUTH,
): Promise<{ status: number; upstream: string | undefined; socket: Socket; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      method: 'CONNECT',
      path: target,
      agent: false,
      headers: { 'proxy-authorization': auth },
    });
    req.on('connect', (res, socket, head) => {
      const status = res.statusCode ?? 0;
      const upstream = res.headers['x-proxy-op-upstream'] as string | undefined;
      if (status === 200) {
        if (head.length > 0) socket.unshift(head);
        resolve({ status, upstream, socket, body: '' });
        return;
      }
      // A refusal's body follows its head on the socket, until the proxy closes it.
      let body = head.toString('utf8');
      socket.on('data', (d: Buffer) => {
        body += d.toString('utf8');
      });
      socket.on('error', () => {});
      socket.once('close', () => resolve({ status, upstream, socket, body }));
    });
    req.on('response', (res) => {
      readAnswer(res).then((a) => resolve({ ...a, socket: res.socket }), reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Writes a line into an open tunnel to the echo target and resolves with what comes back. */
function echo(socket: Socket, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString('utf8');
      if (got.endsWith('\n')) {
        socket.off('data', onData);
        resolve(got);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`${line}\n`);
  });
}

/** Runs `n` calls of `fn`, `concurrency` at a time. */
async function inParallel<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>) {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

describeWithPeers(vitest, 'the gateway in front of a pool of proxies', ['squid'], () => {
  let dir: string;
  let origin: ReturnType<typeof createServer>;
  let originPort: number;
  let echoServer: ReturnType<typeof createTcpServer>;
  let echoPort: number;
  const upstreams = new Map<string, ForwardProxy>();
  let squid: RunningSquid;
  let squidPort: number;
  let gateway: ForwardProxy;
  const seenHeaders: Array<Record<string, string | string[] | undefined>> = [];
  /** The access log of the gateway started last. */
  let accessLog = '';
  let mainLog = '';

  const upstreamAt = async (name: string, address: string) => {
    const file = join(dir, `${name}.passwd`);
    await writeFile(file, `gw:${hashPassword(UP_PASSWORDS[name] as string)}\n`, { mode: 0o600 });
    const p = await startForwardProxy({
      name,
      address,
      port: 0,
      allowedSources: [`${GATEWAY}/32`],
      auth: { realm: 'upstream', passwordFile: file },
      outgoingAddress: address,
      egress: LOOPBACK_ORIGINS,
    });
    upstreams.set(name, p);
    return p;
  };
  const parent = (name: string, password = UP_PASSWORDS[name] as string): ParentProxy => {
    const p = name === 'squid' ? { address: SQUID, port: squidPort } : upstreams.get(name)?.address;
    if (p === undefined) throw new Error(`no upstream ${name}`);
    return { name, url: `http://gw:${encodeURIComponent(password)}@${p.address}:${p.port}` };
  };
  const startGateway = async (
    parents: ParentProxy[],
    extra: Partial<Parameters<typeof startForwardProxy>[0]['parents']> = {},
  ) => {
    const file = join(dir, 'gateway.passwd');
    await writeFile(file, `${GATE_USER.user}:${hashPassword(GATE_USER.password)}\n`, {
      mode: 0o600,
    });
    const logFile = join(dir, `gateway-${Date.now()}-${Math.random()}.log`);
    accessLog = logFile;
    return startForwardProxy({
      name: 'gateway',
      address: GATEWAY,
      port: 0,
      allowedSources: [`${CLIENT}/32`],
      auth: { realm: 'gateway', passwordFile: file },
      accessLog: logFile,
      outgoingAddress: GATEWAY,
      egress: LOOPBACK_ORIGINS,
      parents: { upstreams: parents, ...extra },
    });
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-gateway-'));
    origin = createServer((req, res) => {
      seenHeaders.push(req.headers);
      res.end(`from ${req.socket.remoteAddress} ${req.url}`);
    });
    originPort = await listen(origin);
    echoServer = createTcpServer((s) => {
      s.write(`hello ${s.remoteAddress}\n`);
      s.on('data', (d) => s.write(d));
      s.on('error', () => {});
    });
    echoPort = await listen(echoServer);
    await upstreamAt('a', UP_A);
    await upstreamAt('b', UP_B);
    await upstreamAt('c', UP_C);
    squidPort = await freePort(SQUID);
    squid = await startSquid({
      host: SQUID,
      port: squidPort,
      files: { passwd: `gw:${hashPassword(UP_PASSWORDS.squid as string)}\n` },
      config: (d) =>
        renderSquidConfig({
          port: squidPort,
          listenAddress: SQUID,
          allowedSources: [`${GATEWAY}/32`],
          egress: { allow: [`127.0.0.1:${originPort}`, `127.0.0.1:${echoPort}`] },
          paths: { accessLog: join(d, 'access.log'), cacheLog: join(d, 'cache.log') },
          auth: { realm: 'upstream', passwordFile: join(d, 'passwd') },
        }),
    });
    gateway = await startGateway([parent('a'), parent('b'), parent('squid')]);
    mainLog = accessLog;
  });
  afterAll(async () => {
    await gateway?.close(0);
    for (const p of upstreams.values()) await p.close(0);
    await squid?.stop();
    origin?.close();
    echoServer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const originUrl = (path: string) => `http://127.0.0.1:${originPort}${path}`;
  const echoTarget = () => `127.0.0.1:${echoPort}`;

  it('spreads requests over every upstream, names the one that served each, and the origin sees it', async () => {
    const answers = await inParallel(120, 12, (i) => get(gateway.address, originUrl(`/r${i}`)));
    const by = new Map<string, number>();
    for (const a of answers) {
      expect(a.status, a.body).toBe(200);
      expect(['a', 'b', 'squid']).toContain(a.upstream);
      by.set(a.upstream as string, (by.get(a.upstream as string) ?? 0) + 1);
      // Each of our upstreams connects from its own address; Squid from the system's choice.
      if (a.upstream === 'a') expect(a.body).toMatch(new RegExp(`^from ${UP_A} `));
      if (a.upstream === 'b') expect(a.body).toMatch(new RegExp(`^from ${UP_B} `));
      if (a.upstream === 'squid') expect(String(a.headers.via)).toMatch(/squid/);
    }
    for (const name of ['a', 'b', 'squid']) {
      expect(by.get(name) ?? 0, `requests through ${name}`).toBeGreaterThan(10);
    }
    // The access log names the upstream of each request, and holds no credential.
    await new Promise((r) => setTimeout(r, 300));
    const logged = (await readFile(mainLog, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { target: string; upstream?: string });
    for (const a of answers.slice(0, 20)) {
      const path = /\/r\d+$/.exec(a.body)?.[0] ?? '';
      const line = logged.find((l) => l.target.endsWith(path));
      expect(line?.upstream, `the log line of ${path}`).toBe(a.upstream);
    }
    const text = await readFile(mainLog, 'utf8');
    for (const p of Object.values(UP_PASSWORDS)) expect(text).not.toContain(p);
  });

  it('opens CONNECT tunnels through every upstream and names the upstream in the 200', async () => {
    const seen = new Set<string>();
    await inParallel(30, 6, async () => {
      const t = await connectVia(gateway.address, echoTarget());
      expect(t.status).toBe(200);
      expect(['a', 'b', 'squid']).toContain(t.upstream);
      seen.add(t.upstream as string);
      const hello = await new Promise<string>((r) => t.socket.once('data', (d) => r(String(d))));
      if (t.upstream === 'a') expect(hello).toBe(`hello ${UP_A}\n`);
      expect(await echo(t.socket, 'ping')).toBe('ping\n');
      t.socket.destroy();
    });
    expect([...seen].sort()).toEqual(['a', 'b', 'squid']);
  });

  it('asks its clients for the gateway credential (407), and never passes it upstream', async () => {
    const none = await get(gateway.address, originUrl('/x'), { 'proxy-authorization': '' });
    expect(none.status).toBe(407);
    expect(none.headers['proxy-authenticate']).toBe('Basic realm="gateway"');
    const wrong = await get(gateway.address, originUrl('/x'), {
      'proxy-authorization': basic(GATE_USER.user, 'not-it'),
    });
    expect(wrong.status).toBe(407);
    const t = await connectVia(gateway.address, echoTarget(), basic('client', 'nope'));
    expect(t.status).toBe(407);
    t.socket.destroy();
    seenHeaders.length = 0;
    expect((await get(gateway.address, originUrl('/y'))).status).toBe(200);
    expect(seenHeaders[0]?.['proxy-authorization']).toBeUndefined();
  });

  it('turns an upstream 407 into a 502 that names the upstream and not its credential', async () => {
    const gw = await startGateway([parent('a', 'wrong-password-SENTINEL-x9')]);
    try {
      const a = await get(gw.address, originUrl('/z'));
      expect(a.status).toBe(502);
      expect(a.body).toBe("upstream a refused the gateway's credential (407)\n");
      expect(a.upstream).toBe('a');
      const t = await connectVia(gw.address, echoTarget());
      expect(t.status).toBe(502);
      expect(t.body).toBe("upstream a refused the gateway's credential (407)\n");
      t.socket.destroy();
      const stats = JSON.stringify(gw.parentStats());
      expect(stats).not.toContain('wrong-password');
      const metrics = await get(gw.address, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(
        /proxy_op_gateway_upstream_failures_total\{upstream="a"\} [1-9]/,
      );
      expect(metrics.body).not.toContain('wrong-password');
      expect(metrics.body).not.toContain(Buffer.from('gw:wrong').toString('base64').slice(0, 8));
    } finally {
      await gw.close(0);
    }
  });

  it('retries a CONNECT and a request on another upstream when one is down, and takes it out', async () => {
    const downPort = await freePort('127.0.20.99');
    const gw = await startGateway(
      [{ name: 'down', url: `http://gw:x@127.0.20.99:${downPort}` }, parent('a'), parent('b')],
      { ejectAfterFailures: 3 },
    );
    try {
      const tunnels = await inParallel(20, 4, async () => {
        const t = await connectVia(gw.address, echoTarget());
        t.socket.destroy();
        return t;
      });
      expect(tunnels.map((t) => t.status)).toEqual(tunnels.map(() => 200));
      expect(tunnels.some((t) => t.upstream === 'down')).toBe(false);
      const reqs = await inParallel(20, 4, () => get(gw.address, originUrl('/retry')));
      expect(reqs.map((r) => r.status)).toEqual(reqs.map(() => 200));
      const down = gw.parentStats().find((s) => s.name === 'down');
      expect(down?.available, 'taken out after 3 failures in a row').toBe(false);
      expect(down?.failures).toBeGreaterThanOrEqual(3);
      // Verified again (a new probe pass): back in at once.
      gw.setParents([
        { name: 'down', url: `http://gw:x@127.0.20.99:${downPort}`, verified: 'probe-2' },
        parent('a'),
        parent('b'),
      ]);
      expect(gw.parentStats().find((s) => s.name === 'down')?.available).toBe(true);
    } finally {
      await gw.close(0);
    }
  });

  it('an upstream killed under load: no CONNECT fails that had not begun', async () => {
    const doomed = await startForwardProxy({
      name: 'doomed',
      address: '127.0.20.21',
      port: 0,
      allowedSources: [`${GATEWAY}/32`],
      outgoingAddress: '127.0.20.21',
      egress: LOOPBACK_ORIGINS,
    });
    const gw = await startGateway([
      { name: 'doomed', url: `http://127.0.20.21:${doomed.address.port}` },
      parent('a'),
      parent('b'),
    ]);
    try {
      const failedBeforeOpen: string[] = [];
      let opened = 0;
      let cutAfterOpen = 0;
      const load = inParallel(200, 8, async (i) => {
        if (i === 60) void doomed.close(0);
        const t = await connectVia(gw.address, echoTarget());
        if (t.status !== 200) {
          failedBeforeOpen.push(`${t.status} ${t.body.trim()}`);
          t.socket.destroy();
          return;
        }
        opened++;
        try {
          await echo(t.socket, `n${i}`);
        } catch {
          cutAfterOpen++;
        }
        t.socket.destroy();
      });
      await load;
      expect(failedBeforeOpen, 'CONNECTs refused before they opened').toEqual([]);
      expect(opened).toBe(200);
      expect(cutAfterOpen).toBeLessThanOrEqual(8);
    } finally {
      await gw.close(0);
    }
  });

  it('keeps a session on one upstream across 1000 requests (header), and strips the field', async () => {
    const gw = await startGateway([parent('a'), parent('b'), parent('c')], { session: 'header' });
    try {
      seenHeaders.length = 0;
      const first = await get(gw.address, originUrl('/s'), { 'x-proxy-op-session': 'alpha' });
      const answers = await inParallel(1000, 16, (i) =>
        get(gw.address, originUrl(`/s${i}`), { 'x-proxy-op-session': 'alpha' }),
      );
      expect(new Set(answers.map((a) => a.upstream))).toEqual(new Set([first.upstream]));
      expect(seenHeaders.some((h) => h['x-proxy-op-session'] !== undefined)).toBe(false);
      // Other sessions spread over the rest.
      const others = await inParallel(30, 6, (i) =>
        get(gw.address, originUrl('/o'), { 'x-proxy-op-session': `s${i}` }),
      );
      expect(new Set(others.map((a) => a.upstream)).size).toBe(3);
      // The session's upstream leaves the pool: the session moves, and stays on its new one.
      gw.setParents(['a', 'b', 'c'].filter((n) => n !== first.upstream).map((n) => parent(n)));
      const moved = await inParallel(50, 5, () =>
        get(gw.address, originUrl('/m'), { 'x-proxy-op-session': 'alpha' }),
      );
      expect(new Set(moved.map((a) => a.upstream)).size).toBe(1);
      expect(moved[0]?.upstream).not.toBe(first.upstream);
    } finally {
      await gw.close(0);
    }
  });

  it('keeps a client address on one upstream (session: client)', async () => {
    const gw = await startGateway([parent('a'), parent('b'), parent('c')], { session: 'client' });
    try {
      const answers = await inParallel(100, 8, () => get(gw.address, originUrl('/c')));
      expect(new Set(answers.map((a) => a.upstream)).size).toBe(1);
    } finally {
      await gw.close(0);
    }
  });

  it('the pool rotates under load: no request fails, and a removed upstream drains', async () => {
    const gw = await startGateway([parent('a'), parent('b')], { drainMs: 1_500 });
    try {
      const open = await connectVia(gw.address, echoTarget());
      expect(open.status).toBe(200);
      const through = open.upstream as string;
      await new Promise((r) => open.socket.once('data', r)); // the target's hello
      let stop = false;
      const statuses: number[] = [];
      const loop = (async () => {
        while (!stop) statuses.push((await get(gw.address, originUrl('/rot'))).status);
      })();
      await new Promise((r) => setTimeout(r, 200));
      // `through` is replaced by c, as a pool rotation replaces a Proxy.
      gw.setParents([
        ...['a', 'b'].filter((n) => n !== through).map((n) => parent(n)),
        parent('c'),
      ]);
      expect(await echo(open.socket, 'still here'), 'the tunnel runs on during its drain').toBe(
        'still here\n',
      );
      const closed = new Promise<void>((r) => open.socket.once('close', () => r()));
      await closed; // cut once drainMs is over
      await new Promise((r) => setTimeout(r, 200));
      stop = true;
      await loop;
      expect(statuses.length).toBeGreaterThan(20);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const after = await inParallel(30, 6, () => get(gw.address, originUrl('/after')));
      expect(after.some((a) => a.upstream === through)).toBe(false);
      expect(after.some((a) => a.upstream === 'c')).toBe(true);
    } finally {
      await gw.close(0);
    }
  });

  it('the program follows its parents file: a new list within seconds, a broken one kept out', async () => {
    const list = join(dir, 'upstreams.json');
    const writeList = async (names: string[], text?: string) => {
      const tmp = `${list}.tmp`;
      await writeFile(tmp, text ?? JSON.stringify({ upstreams: names.map((n) => parent(n)) }));
      await rename(tmp, list);
    };
    await writeList(['a']);
    const passwd = join(dir, 'program-gateway.passwd');
    await writeFile(passwd, `${GATE_USER.user}:${hashPassword(GATE_USER.password)}\n`);
    const program = await startProgram({
      address: GATEWAY,
      port: await freePort(GATEWAY),
      allowedSources: [`${CLIENT}/32`],
      outgoingAddress: GATEWAY,
      auth: { realm: 'gateway', passwordFile: passwd },
      parents: { file: list, session: 'none' },
    });
    try {
      const at = { address: program.address, port: program.port };
      expect((await get(at, originUrl('/p1'))).upstream).toBe('a');
      await writeList(['b']);
      expect(
        await eventually(() => {
          void get(at, originUrl('/p2')).then((r) => {
            last = r.upstream;
          });
          return last === 'b';
        }, 10_000),
        'the new list is followed',
      ).toBe(true);
      await writeList([], '{"upstreams": [ not json');
      await new Promise((r) => setTimeout(r, 2_500));
      expect((await get(at, originUrl('/p3'))).upstream, 'a broken file changes nothing').toBe('b');
      expect(program.stderr()).toContain(`parents.file: cannot read ${list} (not JSON)`);
      expect(program.stderr()).not.toContain(UP_PASSWORDS.b as string);
    } finally {
      await stopProgram(program);
    }
    // A bad entry at start: exit 2, naming the parent and not its URL.
    await writeFile(
      list,
      JSON.stringify({ upstreams: [{ name: 'x', url: 'ftp://u:SENTINEL-bad-url-1@h:1' }] }),
    );
    const cfg = join(dir, 'bad-gateway.json');
    await writeFile(
      cfg,
      JSON.stringify({ name: 'g', address: GATEWAY, port: 1, parents: { file: list } }),
    );
    const run = await promisify(execFile)(process.execPath, [
      proxyServerPath(),
      '--config',
      cfg,
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('the url of parent x is not http://');
    expect(run.stderr).not.toContain('SENTINEL-bad-url-1');
  });
  let last: string | undefined;
});
