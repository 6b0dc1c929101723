// Peers: a real upstream proxy of this package behind the gateway, a real origin, node:http and
// the `socks` client library as the clients; all on 127.0.0.0/8. The gateway starts with no
// upstream (a pool at zero) and is given one while work waits, as its parents file would.
import { once } from 'node:events';
import { createServer, type IncomingMessage, request } from 'node:http';
import type { Socket } from 'node:net';
import { SocksClient } from 'socks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ForwardProxy, startForwardProxy } from '../src/index.js';
import { LOOPBACK_ORIGINS, listen } from './support.js';

const GATEWAY = '127.0.23.1';
const MEMBER = '127.0.23.11';

let origin: ReturnType<typeof createServer>;
let originPort: number;
let member: ForwardProxy;
const gateways: ForwardProxy[] = [];

beforeAll(async () => {
  origin = createServer((req, res) => res.end(`${req.socket.remoteAddress} ${req.url}`));
  originPort = await listen(origin);
  member = await startForwardProxy({
    name: 'member',
    address: MEMBER,
    port: 0,
    allowedSources: [`${GATEWAY}/32`],
    outgoingAddress: MEMBER,
    egress: LOOPBACK_ORIGINS,
  });
});

afterAll(async () => {
  for (const g of gateways) await g.close(0);
  await member?.close(0);
  origin?.close();
});

async function gateway(wake: { timeoutMs: number; maxWaiting: number }): Promise<ForwardProxy> {
  const g = await startForwardProxy({
    name: 'gateway',
    address: GATEWAY,
    port: 0,
    allowedSources: ['127.0.0.1/32'],
    outgoingAddress: GATEWAY,
    egress: LOOPBACK_ORIGINS,
    parents: { upstreams: [], wake },
  });
  gateways.push(g);
  return g;
}

const memberParent = () => ({
  name: 'member',
  url: `http://${MEMBER}:${member.address.port}`,
});

interface Answer {
  status: number;
  body: string;
  headers: IncomingMessage['headers'];
}

function get(g: ForwardProxy, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: GATEWAY,
      port: g.address.port,
      path: `http://127.0.0.1:${originPort}${path}`,
      agent: false,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

function connectVia(g: ForwardProxy): Promise<{ status: number; socket: Socket; head: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: GATEWAY,
      port: g.address.port,
      method: 'CONNECT',
      path: `127.0.0.1:${originPort}`,
      agent: false,
    });
    req.on('connect', (res, socket) => {
      const head = Object.entries(res.headers)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join('\n');
      resolve({ status: res.statusCode ?? 0, socket, head });
    });
    req.on('error', reject);
    req.end();
  });
}

async function metrics(g: ForwardProxy): Promise<string> {
  return (await get(g, '').catch(() => ({ body: '' }))).body;
}

/** The gateway's own /metrics (origin-form). */
function gatewayMetrics(g: ForwardProxy): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: GATEWAY, port: g.address.port, path: '/metrics', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a gateway at zero upstreams, with wake', () => {
  it('holds a request, a tunnel and a SOCKS5 connection until an upstream comes, then serves them', async () => {
    const g = await gateway({ timeoutMs: 20_000, maxWaiting: 10 });
    const plain = get(g, '/held');
    const tunnel = connectVia(g);
    const socks = SocksClient.createConnection({
      proxy: { host: GATEWAY, port: g.address.port, type: 5 },
      command: 'connect',
      destination: { host: '127.0.0.1', port: originPort },
      timeout: 20_000,
    });
    await until(
      async () => (await gatewayMetrics(g)).includes('proxy_op_gateway_waiting 3'),
      'three waiting',
    );
    g.setParents([memberParent()]);
    const answer = await plain;
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`${MEMBER} /held`);
    expect(answer.headers['x-proxy-op-upstream']).toBe('member');
    const t = await tunnel;
    expect(t.status).toBe(200);
    t.socket.write(`GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const chunks: Buffer[] = [];
    t.socket.on('data', (c: Buffer) => chunks.push(c));
    await once(t.socket, 'end');
    expect(Buffer.concat(chunks).toString()).toContain(`${MEMBER} /tunnel`);
    const s = (await socks).socket;
    s.write(`GET /socks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    await once(s, 'end');
    expect(Buffer.concat(got).toString()).toContain(`${MEMBER} /socks`);
    expect(await gatewayMetrics(g)).toContain('proxy_op_gateway_waiting 0');
  });

  it('answers 503 with Retry-After past the wake timeout, and SOCKS5 a general failure', async () => {
    const g = await gateway({ timeoutMs: 300, maxWaiting: 10 });
    const a = await get(g, '/late');
    expect(a.status).toBe(503);
    expect(a.headers['retry-after']).toBe('5');
    expect(a.body).toBe(
      'no upstream proxy came in time (the pool is waking from zero); try again\n',
    );
    const t = await connectVia(g);
    expect(t.status).toBe(503);
    expect(t.head).toContain('retry-after: 5');
    const socks = await SocksClient.createConnection({
      proxy: { host: GATEWAY, port: g.address.port, type: 5 },
      command: 'connect',
      destination: { host: '127.0.0.1', port: originPort },
      timeout: 5_000,
    }).then(
      () => 'opened',
      (err: Error) => err.message,
    );
    // The socks library names reply 1, the general failure, "Failure".
    expect(socks).toBe('Socks5 proxy rejected connection - Failure');
  });

  it('holds at most maxWaiting: the next is 503 at once', async () => {
    const g = await gateway({ timeoutMs: 20_000, maxWaiting: 2 });
    const held = [get(g, '/one'), get(g, '/two')];
    await until(
      async () => (await gatewayMetrics(g)).includes('proxy_op_gateway_waiting 2'),
      'two waiting',
    );
    const started = Date.now();
    const third = await get(g, '/three');
    expect(third.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(5_000);
    g.setParents([memberParent()]);
    for (const a of await Promise.all(held)) expect(a.status).toBe(200);
  });

  it('without wake, an empty gateway answers 502 at once', async () => {
    const g = await startForwardProxy({
      name: 'gateway',
      address: GATEWAY,
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      egress: LOOPBACK_ORIGINS,
      parents: { upstreams: [] },
    });
    gateways.push(g);
    expect((await get(g, '/')).status).toBe(502);
    expect(await metrics(g)).toBe('no upstream proxy is available\n');
  });
});
