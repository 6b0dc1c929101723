// Peer: the real Squid (Debian `squid`): `squid -k parse` reads every configuration the provider
// generates, and a Squid run on loopback with one forwards for an allowed source and refuses others.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, request, type Server } from 'node:http';
import { type AddressInfo, createServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { renderSquidConfig } from '@proxy-op/squid-config';
import {
  describeWithPeers,
  type RunningSquid,
  requestThroughProxy,
  startSquid,
  which,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { CHECK_POD_NAME } from '../src/check.js';
import { buildPod, type PodPlan, SQUID_CONF_ANNOTATION } from '../src/pod.js';

const { afterAll, beforeAll, expect, it } = vitest;

const plan: PodPlan = {
  namespace: 'default',
  name: 'proxy-default-web-0a1b2c3d',
  uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
  installation: 'default',
  port: 3128,
  allowedSources: ['10.0.0.0/8'],
  connectPorts: [443],
  image: { image: 'squid', squidPath: '/usr/sbin/squid', runAsUser: 13, runAsGroup: 13 },
  machineType: { cpu: '100m', memory: '128Mi' },
  imagePullSecrets: [],
};

/** Every shape of configuration the provider generates. */
const generated: Record<string, string> = {
  'a Pod, one IPv4 source': buildPod(plan).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'a Pod, IPv4 and IPv6 sources, a host address, port 8080': buildPod({
    ...plan,
    port: 8080,
    allowedSources: ['10.0.0.0/8', '192.168.1.7/32', 'fd00::/8', '2001:db8::1/128'],
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'a Pod, CONNECT to 443 and 8443, every IPv4 and IPv6 address': buildPod({
    ...plan,
    connectPorts: [443, 8443],
    allowedSources: ['0.0.0.0/0', '::/0'],
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'a Pod, overlapping sources in both orders': buildPod({
    ...plan,
    allowedSources: ['10.1.0.0/16', '10.0.0.0/8', '10.2.0.0/16', 'fd00:1::/32', 'fd00::/8'],
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'a Pod with a destination policy': buildPod({
    ...plan,
    egress: {
      allow: ['10.20.0.7:5432', '192.168.0.0/16', '*.internal.example:8000-8100', '[fd00::1]:443'],
      deny: ['10.20.99.0/24', 'ads.example'],
      connectPorts: [443, '8443-8444'],
      httpPorts: [80, 8080],
    },
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'a Pod with credentials': buildPod({
    ...plan,
    auth: { realm: 'proxy-op default/web', credentialsTtlSeconds: 60 },
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  "the Checker's dry-run Pod": buildPod({
    ...plan,
    name: CHECK_POD_NAME,
    allowedSources: ['127.0.0.1/32'],
  }).metadata!.annotations![SQUID_CONF_ANNOTATION]!,
  'loopback, with files for logs': renderSquidConfig({
    port: 39128,
    allowedSources: ['127.0.0.1/32'],
    connectPorts: [443],
    listenAddress: '127.0.0.1',
    paths: { accessLog: '/tmp/access.log', cacheLog: '/tmp/cache.log' },
  }),
};

const run = promisify(execFile);

describeWithPeers(vitest, 'the real Squid reads every generated configuration', ['squid'], () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'proxy-op-squid-parse-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const [what, conf] of Object.entries(generated)) {
    it(`squid -k parse accepts ${what}`, async () => {
      const file = join(dir, `${what.replace(/\W+/g, '-')}.conf`);
      await writeFile(file, conf);
      const { stdout, stderr } = await run(which('squid')!, ['-k', 'parse', '-f', file]);
      const out = `${stdout}\n${stderr}`;
      expect(out).toContain(`Processing Configuration File: ${file}`);
      expect(out.split('\n').filter((l) => /FATAL|ERROR|WARNING|Bungled/i.test(l))).toEqual([]);
    });
  }

  it('squid -k parse refuses a broken file (the check can fail)', async () => {
    const file = join(dir, 'broken.conf');
    await writeFile(file, `${generated['a Pod, one IPv4 source']}http_access allow nobody_knows\n`);
    await expect(run(which('squid')!, ['-k', 'parse', '-f', file])).rejects.toThrow();
  });
});

/** A free loopback port (bound and let go). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** One request through the proxy from `localAddress`: the status and the body. */
function viaProxy(
  proxyPort: number,
  localAddress: string,
  url: string,
): Promise<{ status: number; body: string }> {
  return requestThroughProxy({ address: '127.0.0.1', port: proxyPort }, url, { localAddress });
}

/** A CONNECT through the proxy: its status, and what came back through the tunnel for `ping`. */
function tunnel(proxyPort: number, target: string): Promise<{ status: number; echoed: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: proxyPort,
      method: 'CONNECT',
      path: target,
      agent: false,
    });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, echoed: '' });
        return;
      }
      socket.once('data', (d: Buffer) => {
        socket.destroy();
        resolve({ status: 200, echoed: d.toString('utf8') });
      });
      socket.write('ping');
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, echoed: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

describeWithPeers(vitest, 'a real Squid with a generated configuration', ['squid'], () => {
  let squid: RunningSquid;
  let origin: Server;
  let echo: NetServer;
  let proxyPort: number;
  let originPort: number;
  let echoPort: number;
  let otherPort: number;

  beforeAll(async () => {
    origin = createHttpServer((req, res) => res.end(`origin saw ${req.url}`));
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    originPort = (origin.address() as AddressInfo).port;
    echo = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoPort = (echo.address() as AddressInfo).port;
    otherPort = await freePort();
    proxyPort = await freePort();
    // As in the Pod: never root (startSquid drops a root test run to nobody).
    squid = await startSquid({
      host: '127.0.0.1',
      port: proxyPort,
      config: (dir) =>
        renderSquidConfig({
          port: proxyPort,
          // Narrow before wide: Squid alone would keep 127.0.0.1/32 and ignore 127.0.0.0/30.
          allowedSources: ['127.0.0.1/32', '127.0.0.0/30'],
          // As a Pod's "CONNECT only to 443", with the echo server standing in for port 443; the
          // origin and the echo server are on loopback, which the default policy refuses.
          egress: { allow: ['127.0.0.1'], connectPorts: [echoPort] },
          listenAddress: '127.0.0.1',
          paths: { accessLog: join(dir, 'access.log'), cacheLog: join(dir, 'cache.log') },
        }),
    });
  }, 60_000);

  afterAll(async () => {
    await squid?.stop();
    await new Promise<void>((r) => origin?.close(() => r()));
    await new Promise<void>((r) => echo?.close(() => r()));
  }, 30_000);

  it('forwards for an allowed source', async () => {
    const r = await viaProxy(
      proxyPort,
      '127.0.0.1',
      `http://127.0.0.1:${originPort}/hello?token=s3cr3t`,
    );
    expect(r).toEqual({ status: 200, body: 'origin saw /hello?token=s3cr3t' });
  });

  it('forwards for every address of an allowed network listed after a narrower one', async () => {
    const r = await viaProxy(proxyPort, '127.0.0.3', `http://127.0.0.1:${originPort}/wide`);
    expect(r).toEqual({ status: 200, body: 'origin saw /wide' });
  });

  it('refuses (403) a source outside allowedSources', async () => {
    const r = await viaProxy(proxyPort, '127.0.0.5', `http://127.0.0.1:${originPort}/hello`);
    expect(r.status).toBe(403);
  });

  it('tunnels CONNECT to an allowed port only', async () => {
    expect(await tunnel(proxyPort, `127.0.0.1:${echoPort}`)).toEqual({
      status: 200,
      echoed: 'ping',
    });
    expect((await tunnel(proxyPort, `127.0.0.1:${otherPort}`)).status).toBe(403);
  });

  it('refuses link-local destinations and the cache manager', async () => {
    expect(
      (await viaProxy(proxyPort, '127.0.0.1', 'http://169.254.169.254/latest/meta-data/')).status,
    ).toBe(403);
    expect(
      (
        await viaProxy(
          proxyPort,
          '127.0.0.1',
          `http://127.0.0.1:${proxyPort}/squid-internal-mgr/info`,
        )
      ).status,
    ).toBe(403);
  });

  it('logs requests without their query strings', async () => {
    await viaProxy(proxyPort, '127.0.0.1', `http://127.0.0.1:${originPort}/logged?token=s3cr3t`);
    const file = join(squid.dir, 'access.log');
    let log = '';
    for (let i = 0; i < 50 && !log.includes('/logged'); i++) {
      log = await readFile(file, 'utf8').catch(() => '');
      if (!log.includes('/logged')) await new Promise((r) => setTimeout(r, 100));
    }
    expect(log).toContain(`GET http://127.0.0.1:${originPort}/logged`);
    expect(log).not.toContain('s3cr3t');
    expect(log).toMatch(/127\.0\.0\.5 TCP_DENIED\/403/);
  });
});
