// Peers: curl (HTTP proxy, CONNECT tunnels and --socks5-hostname) and undici's Client as
// the clients; behind the gateway, real upstream proxies of this package (each leaving from an
// address of its own) and the real Squid; a real origin that answers with the address it was
// reached from. All on 127.0.0.0/8.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderSquidConfig } from '@proxy-op/squid-config';
import { describeWithPeers, type RunningSquid, runProcess, startSquid } from '@proxy-op/testkit';
import { buildConnector, Client } from 'undici';
import * as vitest from 'vitest';
import {
  type ForwardProxy,
  hashPassword,
  type ParentProxy,
  startForwardProxy,
} from '../src/index.js';
import { freePort, LOOPBACK_ORIGINS, listen } from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

const GATEWAY = '127.0.22.1';
const MEMBERS = {
  a: { address: '127.0.22.11', country: 'DE', region: 'fsn1', provider: 'hetzner' },
  b: { address: '127.0.22.12', country: 'DE', region: 'nbg1', provider: 'hetzner' },
  c: { address: '127.0.22.13', country: 'US', region: 'us-east-1', provider: 'aws' },
} as const;
const SQUID = '127.0.22.14';
// A user with "-" in its name: the parameters start after the longest known prefix.
const GATE = { user: 'pool-client', password: 'SENTINEL-sessions-9d2e' };
const UP_PASSWORD = 'SENTINEL-sessions-up-41f7';
const connectTo = buildConnector({});

describeWithPeers(
  vitest,
  'user-name sessions, rotation and filters on the gateway',
  ['curl', 'squid'],
  () => {
    let dir: string;
    let origin: ReturnType<typeof createServer>;
    let originPort: number;
    let squid: RunningSquid;
    let squidPort: number;
    const members = new Map<string, ForwardProxy>();
    let gateway: ForwardProxy;
    let all: ParentProxy[];
    /** Who the origin saw: the member whose address it came from (Squid's is the one left). */
    const memberAt = (address: string) =>
      Object.entries(MEMBERS).find(([, m]) => m.address === address)?.[0] ?? 'squid';

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'forward-proxy-sessions-'));
      origin = createServer((req, res) => res.end(`${req.socket.remoteAddress} ${req.url}\n`));
      originPort = await listen(origin);
      const upFile = join(dir, 'up.passwd');
      await writeFile(upFile, `gw:${hashPassword(UP_PASSWORD)}\n`, { mode: 0o600 });
      for (const [name, m] of Object.entries(MEMBERS)) {
        members.set(
          name,
          await startForwardProxy({
            name,
            address: m.address,
            port: 0,
            allowedSources: [`${GATEWAY}/32`],
            auth: { realm: 'member', passwordFile: upFile },
            outgoingAddress: m.address,
            egress: LOOPBACK_ORIGINS,
          }),
        );
      }
      squidPort = await freePort(SQUID);
      squid = await startSquid({
        host: SQUID,
        port: squidPort,
        files: { passwd: `gw:${hashPassword(UP_PASSWORD)}\n` },
        config: (d) =>
          renderSquidConfig({
            port: squidPort,
            listenAddress: SQUID,
            allowedSources: [`${GATEWAY}/32`],
            egress: { allow: [`127.0.0.1:${originPort}`] },
            paths: { accessLog: join(d, 'access.log'), cacheLog: join(d, 'cache.log') },
            auth: { realm: 'member', passwordFile: join(d, 'passwd') },
          }),
      });
      const url = (address: string, port: number) => `http://gw:${UP_PASSWORD}@${address}:${port}`;
      all = [
        ...Object.entries(MEMBERS).map(([name, m]) => ({
          name,
          url: url(m.address, members.get(name)?.address.port ?? 0),
          location: { country: m.country, region: m.region },
          provider: m.provider,
        })),
        {
          name: 'squid',
          url: url(SQUID, squidPort),
          location: { country: 'FI', region: 'hel1' },
          provider: 'hetzner',
        },
      ];
      const gateFile = join(dir, 'gate.passwd');
      await writeFile(gateFile, `${GATE.user}:${hashPassword(GATE.password)}\n`, { mode: 0o600 });
      gateway = await startForwardProxy({
        name: 'gateway',
        address: GATEWAY,
        port: 0,
        allowedSources: ['127.0.0.1/32'],
        auth: { realm: 'gateway', passwordFile: gateFile },
        outgoingAddress: GATEWAY,
        egress: LOOPBACK_ORIGINS,
        parents: { upstreams: all },
      });
    }, 60_000);

    afterAll(async () => {
      await gateway?.close();
      for (const m of members.values()) await m.close();
      await squid?.stop();
      origin?.close();
      await rm(dir, { recursive: true, force: true });
    });

    const proxyUrl = () => `http://${GATEWAY}:${gateway.address.port}`;
    const target = (path: string) => `http://127.0.0.1:${originPort}${path}`;
    /** curl through the gateway with `params` after the user; the members that answered, in order. */
    const curl = async (params: string, args: readonly string[]) => {
      const r = await runProcess('curl', [
        '-sS',
        '--max-time',
        '20',
        '--proxy-user',
        `${GATE.user}${params}:${GATE.password}`,
        ...args,
      ]);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout
        .trim()
        .split('\n')
        .map((line) => memberAt(line.split(' ')[0] as string));
    };

    it('a session keeps one member over 50 requests on 10 connections and over 10 tunnels, with curl', async () => {
      const urls = Array.from({ length: 50 }, (_, i) => target(`/s${i}`));
      const plain = await curl('-session-keep1', [
        '-x',
        proxyUrl(),
        '--parallel',
        '--parallel-max',
        '10',
        ...urls,
      ]);
      expect(plain).toHaveLength(50);
      expect(new Set(plain).size).toBe(1);
      const tunnels = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          curl('-session-keep1', ['-p', '-x', proxyUrl(), target(`/t${i}`)]),
        ),
      );
      expect(new Set(tunnels.flat())).toEqual(new Set(plain));
      const socks = await curl('-session-keep1', [
        '--socks5-hostname',
        `${GATEWAY}:${gateway.address.port}`,
        target('/socks'),
      ]);
      expect(socks).toEqual([plain[0]]);
    });

    it('50 session ids spread over every member, each staying where it was put', async () => {
      const first: string[] = [];
      for (let i = 0; i < 50; i++)
        first.push(...(await curl(`-session-id${i}`, ['-x', proxyUrl(), target('/')])));
      const counts = new Map<string, number>();
      for (const m of first) counts.set(m, (counts.get(m) ?? 0) + 1);
      expect([...counts.keys()].sort()).toEqual(['a', 'b', 'c', 'squid']);
      for (const n of counts.values()) expect(n).toBeGreaterThanOrEqual(8);
      for (const i of [0, 17, 49]) {
        expect(await curl(`-session-id${i}`, ['-x', proxyUrl(), target('/')])).toEqual([first[i]]);
      }
    });

    it('rotate-request changes member on every request of one kept-alive connection (undici); without it the connection keeps one (undici, curl)', async () => {
      // One undici Client is one connection: every request goes over it, kept alive.
      const through = async (params: string) => {
        let connects = 0;
        const client = new Client(proxyUrl(), {
          connect: (opts, cb) => {
            connects++;
            return connectTo(opts, cb);
          },
        });
        const token = `Basic ${Buffer.from(`${GATE.user}${params}:${GATE.password}`).toString('base64')}`;
        const seen: { member: string; upstream: string }[] = [];
        try {
          for (let i = 0; i < 12; i++) {
            const res = await client.request({
              method: 'GET',
              path: target(`/r${i}`),
              headers: { 'proxy-authorization': token, host: `127.0.0.1:${originPort}` },
            });
            const body = await res.body.text();
            seen.push({
              member: memberAt(body.split(' ')[0] as string),
              upstream: String(res.headers['x-proxy-op-upstream']),
            });
          }
        } finally {
          await client.close();
        }
        expect(connects, 'connections made to the gateway').toBe(1);
        return seen;
      };
      const rotating = await through('-rotate-request');
      for (let i = 1; i < rotating.length; i++) {
        expect(rotating[i]?.member).not.toBe(rotating[i - 1]?.member);
      }
      // Each request went where the gateway says it went: no member connection was reused for another.
      for (const s of rotating) expect(s.upstream).toBe(s.member);
      // Without a rotation or a session, one connection keeps its member (curl reuses its connection
      // for URLs given in a row).
      const alike = await through('');
      expect(new Set(alike.map((s) => s.member)).size).toBe(1);
      const kept = await curl('', [
        '-x',
        proxyUrl(),
        ...Array.from({ length: 12 }, (_, i) => target(`/k${i}`)),
      ]);
      expect(kept).toHaveLength(12);
      expect(new Set(kept).size).toBe(1);
    });

    it('a session moves when its member leaves the pool, says so once, and stays on the new one', async () => {
      const [home] = await curl('-session-mover', ['-x', proxyUrl(), target('/')]);
      gateway.setParents(all.filter((p) => p.name !== home));
      try {
        const r = await runProcess('curl', [
          '-sS',
          '-D',
          '-',
          '-x',
          proxyUrl(),
          '--proxy-user',
          `${GATE.user}-session-mover:${GATE.password}`,
          target('/moved'),
        ]);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout.toLowerCase()).toContain(`x-proxy-op-session-moved: ${home}`);
        const now = /x-proxy-op-upstream: (\S+)/i.exec(r.stdout)?.[1];
        expect(now).toBeDefined();
        expect(now).not.toBe(home);
        const again = await runProcess('curl', [
          '-sS',
          '-D',
          '-',
          '-x',
          proxyUrl(),
          '--proxy-user',
          `${GATE.user}-session-mover:${GATE.password}`,
          target('/again'),
        ]);
        expect(again.stdout.toLowerCase()).not.toContain('x-proxy-op-session-moved');
        expect(/x-proxy-op-upstream: (\S+)/i.exec(again.stdout)?.[1]).toBe(now);
      } finally {
        gateway.setParents(all);
      }
    });

    it('country, region and provider choose the members; a filter nothing matches is 502 naming it', async () => {
      const via = (params: string) =>
        curl(params, ['-x', proxyUrl(), target('/'), target('/'), target('/')]);
      expect(new Set(await via('-rotate-request-country-de'))).toEqual(new Set(['a', 'b']));
      expect(await via('-country-us')).toEqual(['c', 'c', 'c']);
      expect(await via('-region-hel1')).toEqual(['squid', 'squid', 'squid']);
      expect(await via('-region-us-east-1-provider-aws')).toEqual(['c', 'c', 'c']);
      expect(new Set(await via('-rotate-request-provider-hetzner'))).toEqual(
        new Set(['a', 'b', 'squid']),
      );
      const none = await runProcess('curl', [
        '-sS',
        '-w',
        '%{http_code}',
        '-x',
        proxyUrl(),
        '--proxy-user',
        `${GATE.user}-country-jp:${GATE.password}`,
        target('/'),
      ]);
      expect(none.stdout).toBe('no upstream matches country=JP\n502');
    });

    it('a bad parameter is 407 naming it, never the password; SOCKS5 refuses it', async () => {
      const bad = async (name: string) =>
        runProcess('curl', [
          '-sS',
          '-w',
          '%{http_code}',
          '-x',
          proxyUrl(),
          '--proxy-user',
          `${name}:${GATE.password}`,
          target('/'),
        ]);
      const unknown = await bad(`${GATE.user}-contry-de`);
      expect(unknown.stdout).toContain('"contry" is unknown');
      expect(unknown.stdout.endsWith('407')).toBe(true);
      const ttl = await bad(`${GATE.user}-session-a-ttl-99h`);
      expect(ttl.stdout).toContain('"ttl-99h" is not valid');
      for (const r of [unknown, ttl]) expect(r.stdout + r.stderr).not.toContain(GATE.password);
      // A wrong password with parameters is a plain 407: nothing about the parameters.
      const wrong = await runProcess('curl', [
        '-sS',
        '-x',
        proxyUrl(),
        '--proxy-user',
        `${GATE.user}-contry-de:wrong`,
        target('/'),
      ]);
      expect(wrong.stdout).not.toContain('contry');
      const socks = await runProcess('curl', [
        '-sS',
        '--socks5-hostname',
        `${GATEWAY}:${gateway.address.port}`,
        '--proxy-user',
        `${GATE.user}-contry-de:${GATE.password}`,
        target('/'),
      ]);
      expect(socks.code).not.toBe(0);
      expect(socks.stderr).toMatch(/rejected/i);
    });
  },
);
