// Peers: the proxy in process with sessions from the user name, in front of an origin that
// keeps connections open and a TCP service, both answering with the source address they saw;
// and the gateway in process (sessions by header) in front of a stand-in parent proxy that
// answers every request, and every CONNECT, the same way. All on 127.0.0.0/8: the egress
// addresses are loopback addresses (127.0.7.x); test/egress-addresses-netns.test.ts has an
// IPv6 /64.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword, startForwardProxy } from '../src/index.js';
import { LOOPBACK_ORIGINS, listen } from './support.js';

const LIST = Array.from({ length: 16 }, (_, i) => `127.0.7.${i + 2}`);

let parent: { server: Server; port: number };
let origin: { server: Server; port: number };
let service: { server: TcpServer; port: number };
let dir: string;

beforeAll(async () => {
  const p = createServer((req, res) => res.end(req.socket.remoteAddress));
  p.on('connect', (req, socket) => {
    socket.end(`HTTP/1.1 200 OK\r\n\r\n${req.socket.remoteAddress}`);
  });
  parent = { server: p, port: await listen(p) };
  // Keeps connections open, as most origins do: the proxy's pool holds them between requests.
  const o = createServer((req, res) => res.end(req.socket.remoteAddress));
  origin = { server: o, port: await listen(o) };
  const t = createTcpServer((socket) => socket.end(socket.remoteAddress ?? ''));
  service = { server: t, port: await listen(t) };
  dir = await mkdtemp(join(tmpdir(), 'egress-sessions-'));
});

afterAll(async () => {
  parent?.server.close();
  origin?.server.close();
  service?.server.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Records that session `s` was seen leaving from `from`. */
function recorder() {
  const seen = new Map<string, Set<string>>();
  const saw = (s: string, from: string) => {
    const set = seen.get(s) ?? new Set<string>();
    set.add(from);
    seen.set(s, set);
  };
  return { seen, saw };
}

/**
 * Sends `method target` through `proxy` on a connection of its own, with `headers`; resolves
 * with the body of the answer (of a tunnel: what came through it), or the status when not 200.
 */
function ask(
  proxy: { address: string; port: number },
  method: 'GET' | 'CONNECT',
  target: string,
  headers: Record<string, string>,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: proxy.address,
      port: proxy.port,
      method,
      path: target,
      headers,
      agent: false,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve(res.statusCode === 200 ? body : `${res.statusCode}`));
    });
    req.on('connect', (_res, socket, head) => {
      let text = head.toString();
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        text += d;
      });
      socket.on('close', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('egress.addresses with sessions', () => {
  it('a proxy keeps each session of the user name on its address, kept-open connections and tunnels included', async () => {
    const passwordFile = join(dir, 'passwd');
    await writeFile(passwordFile, `alice:${hashPassword('secret')}\n`, { mode: 0o600 });
    const proxy = await startForwardProxy({
      name: 'sessions',
      address: '127.0.7.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      auth: { realm: 'sessions', passwordFile },
      egress: { ...LOOPBACK_ORIGINS, addresses: LIST },
    });
    const as = (session: string) => ({
      'proxy-authorization': `Basic ${Buffer.from(`alice-session-${session}:secret`).toString('base64')}`,
    });
    try {
      const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`);
      const { seen, saw } = recorder();
      // Interleaved, over the connections the proxy keeps open to the origin: one session's idle
      // connection never carries another's request.
      for (let round = 0; round < 3; round++) {
        for (const s of sessions) {
          saw(s, await ask(proxy.address, 'GET', `http://127.0.0.1:${origin.port}/`, as(s)));
        }
      }
      for (const s of sessions) {
        saw(s, await ask(proxy.address, 'CONNECT', `127.0.0.1:${service.port}`, as(s)));
      }
      for (const s of sessions) {
        expect([s, [...(seen.get(s) ?? [])]]).toEqual([s, [expect.stringMatching(/^127\.0\.7\./)]]);
      }
      const used = new Set(sessions.map((s) => [...(seen.get(s) ?? [])][0]));
      expect(used.size).toBeGreaterThan(4);
    } finally {
      await proxy.close();
    }
  });

  it('a gateway keeps each session on its address, kept-open connections and tunnels included', async () => {
    const gateway = await startForwardProxy({
      name: 'gw',
      address: '127.0.7.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: { ...LOOPBACK_ORIGINS, addresses: LIST },
      parents: {
        upstreams: [{ name: 'p', url: `http://127.0.0.1:${parent.port}` }],
        session: 'header',
      },
    });
    try {
      const sessions = Array.from({ length: 20 }, (_, i) => `session-${i}`);
      const { seen, saw } = recorder();
      const header = (s: string) => ({ 'x-proxy-op-session': s });
      // Interleaved, over the connections the gateway keeps open to its parent: one session's
      // idle connection never carries another's request.
      for (let round = 0; round < 3; round++) {
        for (const s of sessions) {
          saw(s, await ask(gateway.address, 'GET', 'http://a.test/', header(s)));
        }
      }
      for (const s of sessions) {
        saw(s, await ask(gateway.address, 'CONNECT', 'a.test:443', header(s)));
      }
      for (const s of sessions) {
        expect([s, [...(seen.get(s) ?? [])]]).toEqual([s, [expect.stringMatching(/^127\.0\.7\./)]]);
      }
      const used = new Set(sessions.map((s) => [...(seen.get(s) ?? [])][0]));
      expect(used.size).toBeGreaterThan(4);
    } finally {
      await gateway.close(0);
    }
  });
});
