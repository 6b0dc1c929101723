// Peers: real upstream proxies of this package behind the gateway, each leaving from an address
// of its own; two real origins on two loopback addresses, the first answering 403 to one
// upstream's address (a target that banned it) and 200 to the others; node:http as the client.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bans, checkBanRules } from '../src/bans.js';
import { type ForwardProxy, hashPassword, startForwardProxy } from '../src/index.js';
import { LOOPBACK_ORIGINS } from './support.js';

const GATEWAY = '127.0.24.1';
const MEMBERS = { a: '127.0.24.11', b: '127.0.24.12', c: '127.0.24.13' } as const;
const BANNED = MEMBERS.a;
const ADMIN = { user: 'ops', password: 'SENTINEL-admin-5b1e' };

let dir: string;
const origins: ReturnType<typeof createServer>[] = [];
const ports = new Map<string, number>();
/** Requests each origin got, by the address they came from. */
const seen = new Map<string, string[]>();
const members = new Map<string, ForwardProxy>();
let gateway: ForwardProxy;

async function origin(host: string, banning: string | undefined): Promise<void> {
  const s = createServer((req, res) => {
    const from = req.socket.remoteAddress ?? '';
    seen.get(host)?.push(from);
    if (from === banning) {
      res.writeHead(403, { 'content-type': 'text/html' });
      res.end('<h1>Access denied</h1>');
      return;
    }
    res.end(`${from} ${req.method} ${req.url}`);
  });
  await new Promise<void>((r) => s.listen(0, host, r));
  origins.push(s);
  seen.set(host, []);
  ports.set(host, (s.address() as AddressInfo).port);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forward-proxy-bans-'));
  await origin('127.0.0.1', BANNED);
  await origin('127.0.0.2', undefined);
  for (const [name, address] of Object.entries(MEMBERS)) {
    members.set(
      name,
      await startForwardProxy({
        name,
        address,
        port: 0,
        allowedSources: [`${GATEWAY}/32`],
        outgoingAddress: address,
        egress: LOOPBACK_ORIGINS,
      }),
    );
  }
  const adminFile = join(dir, 'admin.passwd');
  await writeFile(adminFile, `${ADMIN.user}:${hashPassword(ADMIN.password)}\n`, { mode: 0o600 });
  gateway = await startForwardProxy({
    name: 'gateway',
    address: GATEWAY,
    port: 0,
    allowedSources: ['127.0.0.1/32'],
    outgoingAddress: GATEWAY,
    egress: LOOPBACK_ORIGINS,
    admin: { realm: 'gateway admin', passwordFile: adminFile },
    parents: {
      upstreams: Object.entries(MEMBERS).map(([name, address]) => ({
        name,
        url: `http://${address}:${members.get(name)?.address.port}`,
      })),
      bans: {
        rules: [
          {
            name: 'blocked',
            hosts: ['127.0.0.1', '*.example.test'],
            status: [403],
            quarantineMs: 60_000,
          },
        ],
      },
    },
  });
});

afterAll(async () => {
  await gateway?.close(0);
  for (const m of members.values()) await m.close(0);
  for (const o of origins) o.close();
  await rm(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: string;
  headers: IncomingMessage['headers'];
}

/** One request to the gateway on a connection of its own. */
function send(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const length =
      method === 'POST' ? { 'content-length': String(Buffer.byteLength(body ?? '')) } : {};
    const req = request({
      host: GATEWAY,
      port: gateway.address.port,
      method,
      path,
      headers: { ...length, ...headers },
      agent: false,
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

const to = (host: string, path: string) => `http://${host}:${ports.get(host)}${path}`;
const admin = `Basic ${Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64')}`;

describe('ban rules and the quarantine on the gateway', () => {
  it('no banned answer reaches a client of idempotent GETs; the banned upstream gets no more of that host, and still serves another', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 30; i++) answers.push(await send('GET', to('127.0.0.1', `/g${i}`)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    // The banned address reached the origin once: its ban, retried on another upstream.
    expect(seen.get('127.0.0.1')?.filter((f) => f === BANNED)).toEqual([BANNED]);
    for (const a of answers) expect(a.headers['x-proxy-op-ban']).toBeUndefined();
    // The other host: the banned upstream serves it as before.
    const other: string[] = [];
    for (let i = 0; i < 9; i++)
      other.push((await send('GET', to('127.0.0.2', `/o${i}`))).body.split(' ')[0] ?? '');
    expect(other).toContain(BANNED);
  });

  it('lists the quarantine to the admin; a ban it cannot send elsewhere reaches the client, named in X-Proxy-Op-Ban', async () => {
    const listed = await send('GET', '/bans', { authorization: admin });
    expect(JSON.parse(listed.body)).toEqual({
      quarantined: [{ upstream: 'a', host: '127.0.0.1', leftSeconds: expect.any(Number) }],
    });
    // A gateway whose only upstream is the banned one: a GET has nowhere else to go, and a POST
    // with a body is never sent again; both get the ban, named.
    const lone = await startForwardProxy({
      name: 'lone',
      address: GATEWAY,
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      outgoingAddress: GATEWAY,
      egress: LOOPBACK_ORIGINS,
      parents: {
        upstreams: [{ name: 'a', url: `http://${MEMBERS.a}:${members.get('a')?.address.port}` }],
        bans: {
          rules: [{ name: 'blocked', hosts: ['127.0.0.1'], status: [403], quarantineMs: 1 }],
        },
      },
    });
    try {
      const via = (method: string, body?: string) =>
        new Promise<Answer>((resolve, reject) => {
          const req = request({
            host: GATEWAY,
            port: lone.address.port,
            method,
            path: to('127.0.0.1', '/lone'),
            agent: false,
          });
          req.on('response', (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (d: string) => {
              text += d;
            });
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }),
            );
          });
          req.on('error', reject);
          req.end(body);
        });
      for (const a of [await via('GET'), await via('POST', 'form=1')]) {
        expect(a.status).toBe(403);
        expect(a.headers['x-proxy-op-ban']).toBe('blocked');
        expect(a.headers['x-proxy-op-upstream']).toBe('a');
        expect(a.body).toBe('<h1>Access denied</h1>');
      }
    } finally {
      await lone.close(0);
    }
  });

  it('the ban endpoint needs the admin credential, and a report keeps an upstream from a host', async () => {
    const none = await send('POST', '/bans?upstream=b&host=127.0.0.2&for=10m');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="gateway admin"');
    const wrong = await send('POST', '/bans?upstream=b&host=127.0.0.2&for=10m', {
      authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}`,
    });
    expect(wrong.status).toBe(401);
    const bad = await send('POST', '/bans?upstream=b&host=127.0.0.2&for=3d', {
      authorization: admin,
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toBe('for: give a duration from 1s to 24h (30s, 10m, 2h)\n');
    const ok = await send('POST', '/bans?upstream=b&host=127.0.0.2&for=10m', {
      authorization: admin,
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ upstream: 'b', host: '127.0.0.2', seconds: 600 });
    const from: string[] = [];
    for (let i = 0; i < 9; i++)
      from.push((await send('GET', to('127.0.0.2', `/r${i}`))).body.split(' ')[0] ?? '');
    expect(from).not.toContain(MEMBERS.b);
    expect(new Set(from)).toEqual(new Set([MEMBERS.a, MEMBERS.c]));
    expect(JSON.stringify([none, wrong, bad, ok])).not.toContain(ADMIN.password);
  });

  it('counts bans and quarantines in the metrics', async () => {
    const m = await send('GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.body).toContain('proxy_op_gateway_bans_total{host="127.0.0.1",rule="blocked"} 1');
    expect(m.body).toContain('proxy_op_gateway_bans_total{host="127.0.0.2",rule="report"} 1');
    expect(m.body).toContain('proxy_op_gateway_quarantined_hosts{upstream="a"} 1');
    expect(m.body).toContain('proxy_op_gateway_quarantined_hosts{upstream="b"} 1');
  });
});

describe('ban rules', () => {
  it('match by host glob, status and header; the quarantine ends', () => {
    const bans = new Bans({
      rules: [
        {
          name: 'challenge',
          hosts: ['*.shop.test'],
          status: [429, 503],
          header: { name: 'CF-Mitigated', pattern: '^challenge$' },
          quarantineMs: 1_000,
        },
      ],
    });
    const m = (host: string, status: number, names: string[], values: string[]) =>
      bans.match(host, status, names, values);
    expect(m('www.shop.test', 429, ['cf-mitigated'], ['challenge'])).toBe('challenge');
    expect(m('WWW.Shop.Test', 503, ['cf-mitigated'], ['Challenge'])).toBe('challenge');
    expect(m('www.shop.test', 429, [], [])).toBeUndefined();
    expect(m('www.shop.test', 403, ['cf-mitigated'], ['challenge'])).toBeUndefined();
    expect(m('shop.test.evil', 429, ['cf-mitigated'], ['challenge'])).toBeUndefined();
    bans.quarantine('a', 'www.shop.test', 1_000, 0, 'challenge');
    expect(bans.held('a', 'www.shop.test', 999)).toBe(true);
    expect(bans.held('a', 'other.test', 999)).toBe(false);
    expect(bans.held('a', 'www.shop.test', 1_000)).toBe(false);
  });

  it('refuse what they cannot read, naming the field', () => {
    const bad = (r: Record<string, unknown>) => () => checkBanRules([r as never]);
    expect(bad({ hosts: [], status: [403], quarantineMs: 1 })).toThrow(
      'parents.bans.rules[0].hosts: give at least one host glob',
    );
    expect(bad({ hosts: ['a b'], status: [403], quarantineMs: 1 })).toThrow('is not a host glob');
    expect(bad({ hosts: ['x'], status: [99], quarantineMs: 1 })).toThrow(
      '99 is not a final status code',
    );
    expect(
      bad({ hosts: ['x'], status: [403], header: { name: 'x', pattern: '(' }, quarantineMs: 1 }),
    ).toThrow('header.pattern is not a regular expression');
    expect(bad({ hosts: ['x'], status: [403], quarantineMs: 0 })).toThrow('quarantineMs');
  });
});
