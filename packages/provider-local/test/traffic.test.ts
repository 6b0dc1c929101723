// Peer: real proxy processes started by the provider, real HTTP and HTTPS origins on 127.0.0.1
// (a self-signed certificate made by the openssl CLI), real clients on other loopback addresses.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createProvider, isNotFound, type Provider } from '@proxy-op/contract';
import { describeWithPeers, getOverTunnel } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalConfig, providerModule } from '../src/index.js';
import { exists, killAllSpawned, removeStateDir, testConfig } from './fixture.js';
import { freePort, listen, selfSignedCert, startOrigin, tunnel, viaProxy } from './support.js';

describeWithPeers({ describe, it }, 'the local provider with real traffic', ['openssl'], () => {
  let config: LocalConfig;
  let provider: Provider;
  let origin: { server: Server; port: number };
  let tlsOrigin: { server: Server; port: number };
  let cert: string;
  let port: number;

  beforeAll(async () => {
    config = await testConfig({ addressRange: '127.0.6.0/24' });
    provider = await createProvider(providerModule, 'local-t', config, {});
    origin = await startOrigin();
    const pair = await selfSignedCert();
    cert = pair.cert;
    const server = createHttpsServer({ key: pair.key, cert: pair.cert }, (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`secure ${req.method} ${req.url}`);
    });
    tlsOrigin = { server, port: await listen(server) };
    port = await freePort('127.0.0.1');
  }, 60_000);

  afterAll(async () => {
    origin?.server.close();
    tlsOrigin?.server.close();
    await killAllSpawned();
    if (config !== undefined) await removeStateDir(config.stateDir);
  });

  /** A request whose proxy may reach the test's origins (on this host, so refused unless allowed). */
  const request = (name: string, ...alsoAllow: string[]) => ({
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    port,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    allowedSources: ['127.0.0.1/32', '127.0.0.150/32'],
    egress: {
      allow: [`127.0.0.1:${origin.port}`, `127.0.0.1:${tlsOrigin.port}`, ...alsoAllow],
    },
    placement: {},
  });

  it('serves HTTP and HTTPS over CONNECT for allowed sources, refuses others, and cleans up', async () => {
    const id = await provider.create(request('proxy-traffic'));
    const inst = await provider.get(id);
    expect(inst.state).toBe('Running');
    expect(inst.ip).toMatch(/^127\.0\.6\.\d+$/);
    // A local process has no place: neither Get nor ListByTag reports a location.
    expect(inst).not.toHaveProperty('location');
    const listed = (await provider.listByTag()).find((i) => i.id === id);
    expect(listed?.id).toBe(id);
    expect(listed).not.toHaveProperty('location');
    const proxy = { address: inst.ip as string, port };

    // Plain HTTP, absolute URI, with a body; the origin sees the Via header.
    const plain = await viaProxy(proxy, `http://127.0.0.1:${origin.port}/hello?x=1`, {
      method: 'POST',
      body: 'ping',
    });
    expect(plain.status).toBe(200);
    expect(JSON.parse(plain.body)).toMatchObject({
      method: 'POST',
      path: '/hello?x=1',
      body: 'ping',
      via: '1.1 proxy-op',
    });
    // A second allowed source from the request.
    const second = await viaProxy(proxy, `http://127.0.0.1:${origin.port}/b`, {
      localAddress: '127.0.0.150',
    });
    expect(second.status).toBe(200);

    // HTTPS through a CONNECT tunnel, the certificate checked end to end.
    const { status, socket } = await tunnel(proxy, `127.0.0.1:${tlsOrigin.port}`);
    expect(status).toBe(200);
    const secure = await new Promise<string>((resolve, reject) => {
      const tls = tlsConnect({ socket, ca: cert, host: '127.0.0.1' }, () => {
        tls.write('GET /secret HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      });
      let out = '';
      tls.setEncoding('utf8');
      tls.on('data', (d: string) => {
        out += d;
      });
      tls.on('end', () => resolve(out));
      tls.on('error', reject);
    });
    expect(secure).toMatch(/^HTTP\/1\.1 200/);
    expect(secure).toContain('secure GET /secret');

    // A source outside allowedSources is closed as it connects, unanswered, HTTP and CONNECT.
    await expect(
      viaProxy(proxy, `http://127.0.0.1:${origin.port}/`, { localAddress: '127.0.0.200' }),
    ).rejects.toMatchObject({ code: 'ECONNRESET' });
    await expect(
      tunnel(proxy, `127.0.0.1:${tlsOrigin.port}`, { localAddress: '127.0.0.200' }),
    ).rejects.toMatchObject({ code: 'ECONNRESET' });
    // A destination the policy refuses: 403 naming the rule (a metadata address, never dialled).
    const metadata = await viaProxy(proxy, 'http://169.254.169.254/latest/meta-data/');
    expect(metadata).toEqual({
      status: 403,
      body: 'proxy-op: destination refused (link-local)\n',
    });

    // The access log has one JSON line per request, the refused destination included, none
    // for the refused source (a tunnel's line is written when it closes, so the file is read
    // until it has them all).
    const want = [
      '127.0.0.1 POST 200',
      '127.0.0.150 GET 200',
      '127.0.0.1 CONNECT 200',
      '127.0.0.1 GET 403',
    ];
    let logged: string[] = [];
    const deadline = Date.now() + 30_000; // a safety net; the lines come within 100 ms
    while (!want.every((w) => logged.includes(w)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      logged = (await readFile(`${config.stateDir}/proxy-traffic.access.log`, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { client: string; method: string; status: number })
        .map((l) => `${l.client} ${l.method} ${l.status}`);
    }
    expect(logged).toEqual(expect.arrayContaining(want));
    expect(logged.filter((l) => l.startsWith('127.0.0.200 '))).toEqual([]);

    // Delete: the process has exited and its marks and files are gone.
    const state = JSON.parse(await readFile(`${config.stateDir}/proxy-traffic.json`, 'utf8')) as {
      pid: number;
    };
    expect(exists(state.pid)).toBe(true);
    await provider.delete(id);
    expect(exists(state.pid)).toBe(false);
    expect((await readdir(config.stateDir)).filter((f) => f.startsWith('proxy-traffic'))).toEqual(
      [],
    );
    expect(await provider.get(id).catch(isNotFound)).toBe(true);
    expect(await provider.listByTag()).toEqual([]);
  }, 60_000);

  it('reports Stopped when the process dies, and a repeat Create restarts it on the same address', async () => {
    const req = request('proxy-restart');
    const id = await provider.create(req);
    const before = await provider.get(id);
    const file = `${config.stateDir}/proxy-restart.json`;
    const { pid } = JSON.parse(await readFile(file, 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');
    while (exists(pid)) await new Promise((r) => setTimeout(r, 10));
    expect((await provider.get(id)).state).toBe('Stopped');
    expect(await provider.create(req)).toBe(id);
    const after = await provider.get(id);
    expect(after.state).toBe('Running');
    expect(after.ip).toBe(before.ip);
    const res = await viaProxy(
      { address: after.ip as string, port },
      `http://127.0.0.1:${origin.port}/`,
    );
    expect(res.status).toBe(200);
    await provider.delete(id);
    expect(await provider.get(id).catch(isNotFound)).toBe(true);
  }, 60_000);

  it('moves a stopped instance whose address was taken meanwhile', async () => {
    const req = request('proxy-moved');
    const id = await provider.create(req);
    const before = (await provider.get(id)).ip as string;
    const file = `${config.stateDir}/proxy-moved.json`;
    const { pid } = JSON.parse(await readFile(file, 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');
    while (exists(pid)) await new Promise((r) => setTimeout(r, 10));
    // Another program takes the address and port (retried while the killed proxy's
    // connections still linger in the kernel).
    const squatter = createTcpServer();
    for (let i = 0; ; i++) {
      const err = await new Promise<Error | undefined>((resolve) => {
        squatter.once('error', resolve);
        squatter.listen({ host: before, port }, () => {
          squatter.off('error', resolve);
          resolve(undefined);
        });
      });
      if (err === undefined) break;
      if (i >= 100) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      expect((await provider.get(id)).state).toBe('Stopped');
      expect(await provider.create(req)).toBe(id);
      const after = await provider.get(id);
      expect(after.state).toBe('Running');
      expect(after.ip).not.toBe(before);
      const res = await viaProxy(
        { address: after.ip as string, port },
        `http://127.0.0.1:${origin.port}/`,
      );
      expect(res.status).toBe(200);
    } finally {
      squatter.close();
    }
    await provider.delete(id);
  }, 60_000);

  it('gives each instance its own address on the requested port, stable across re-creation', async () => {
    const a = await provider.create(request('proxy-a'));
    const b = await provider.create(request('proxy-b'));
    const ipA = (await provider.get(a)).ip;
    const ipB = (await provider.get(b)).ip;
    expect(ipA).not.toBe(ipB);
    await provider.delete(a);
    const again = await provider.create(request('proxy-a'));
    expect((await provider.get(again)).ip).toBe(ipA);
    await provider.delete(again);
    await provider.delete(b);
  }, 60_000);

  it('connections to a loopback origin leave from the proxy’s own address (HTTP and CONNECT)', async () => {
    const seen = createHttpServer((req, res) => res.end(req.socket.remoteAddress));
    const seenPort = await listen(seen);
    const id = await provider.create(request('proxy-egress', `127.0.0.1:${seenPort}`));
    try {
      const ip = (await provider.get(id)).ip as string;
      const proxy = { address: ip, port };
      const plain = await viaProxy(proxy, `http://127.0.0.1:${seenPort}/`);
      expect(plain).toEqual({ status: 200, body: ip });
      const t = await tunnel(proxy, `127.0.0.1:${seenPort}`);
      expect(t.status).toBe(200);
      const inTunnel = await getOverTunnel(t.socket, '127.0.0.1');
      expect(inTunnel).toBe(ip);
    } finally {
      seen.close();
      await provider.delete(id);
    }
  }, 60_000);

  it('a proxy outlives the process that created it, and another provider sees and deletes it', async () => {
    // A separate Node process creates the instance with the built package, then exits.
    const config2 = { stateDir: config.stateDir, addressRange: config.addressRange };
    const req = {
      name: 'proxy-detached',
      namespace: 'default',
      uid: 'uid-detached',
      port,
      egress: { allow: [`127.0.0.1:${origin.port}`] },
    };
    const script = [
      "import { createProvider } from '@proxy-op/contract';",
      "import { providerModule } from '@proxy-op/provider-local';",
      `const p = await createProvider(providerModule, 'other', ${JSON.stringify(config2)}, {});`,
      `const req = { ...${JSON.stringify(req)}, cloudInit: new Uint8Array(), placement: {} };`,
      'console.log(await p.create(req));',
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), timeout: 30_000 },
    );
    const id = stdout.trim();
    expect(id).toBe('processes/proxy-detached');
    // This process's provider never saw it created: everything is read from the folder.
    const inst = await provider.get(id);
    expect(inst.state).toBe('Running');
    expect(inst.uid).toBe('uid-detached');
    expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
    const res = await viaProxy(
      { address: inst.ip as string, port },
      `http://127.0.0.1:${origin.port}/`,
    );
    expect(res.status).toBe(200);
    const { pid } = JSON.parse(
      await readFile(`${config.stateDir}/proxy-detached.json`, 'utf8'),
    ) as {
      pid: number;
    };
    await provider.delete(id);
    expect(exists(pid)).toBe(false);
    expect(await provider.get(id).catch(isNotFound)).toBe(true);
  }, 60_000);

  it('the Checker finds the folder writable and the range bindable', async () => {
    const results = await provider.check?.();
    expect(results?.map((r) => [r.target, r.reason])).toEqual([
      ['state-dir', 'Reachable'],
      ['address-range', 'Reachable'],
    ]);
  });
});
