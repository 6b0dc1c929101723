// Peers: wire-level fake proxies on loopback that misbehave on purpose (each counts the
// connections it holds), the real whoami target, and @proxy-op/forward-proxy in front of a target
// that answers the wrong nonce.
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ForwardProxy, startForwardProxy } from '@proxy-op/forward-proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProbeAbortedError } from '../src/errors.js';
import { probe } from '../src/probe.js';
import { startWhoami, type Whoami } from '../src/whoami.js';
import { type FakeProxy, fakeProxy, onHead, until } from './support.js';

let whoami: Whoami;
let proxy: ForwardProxy;
const fakes: FakeProxy[] = [];
const servers: Server[] = [];

async function fake(onConnection: Parameters<typeof fakeProxy>[0]): Promise<FakeProxy> {
  const f = await fakeProxy(onConnection);
  fakes.push(f);
  return f;
}

/** An HTTP server on 127.0.0.1 answering every request with `body`; its URL. */
async function origin(body: (url: string) => string): Promise<string> {
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body(req.url ?? '/'));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

beforeAll(async () => {
  whoami = await startWhoami();
  proxy = await startForwardProxy({
    name: 'faults',
    address: '127.0.73.10',
    port: 0,
    allowedSources: ['127.0.0.0/8'],
    // The whoami target and the origins are on loopback, which the proxy refuses unless allowed.
    egress: { allow: ['127.0.0.0/8:1-65535'] },
  });
});

afterAll(async () => {
  for (const f of fakes) await f.close();
  for (const s of servers) s.close();
  await proxy?.close(0);
  await whoami?.close();
});

const through = () => ({ host: '127.0.73.10', port: proxy.address.port });

describe('a target that is not the whoami target', () => {
  it('answering another nonce fails at nonce: a cache could not pass', async () => {
    const url = await origin(() =>
      JSON.stringify({ nonce: 'stale-0123456789', source: '1.2.3.4' }),
    );
    const r = await probe(through(), url);
    expect(r.failure).toMatchObject({ check: 'get', step: 'nonce' });
    expect(r.failure?.message).toMatch(/another nonce than the one sent/);
    expect(r.egressIP).toBeUndefined();
    expect(r.steps.filter((s) => s.step === 'nonce').map((s) => s.ok)).toEqual([false, false]);
  });

  it('answering a page (a captive portal) fails at nonce', async () => {
    const url = await origin(() => '<html>log in to use this network</html>');
    const r = await probe(through(), url);
    expect(r.failure).toMatchObject({ check: 'get', step: 'nonce' });
    expect(r.failure?.message).toMatch(/no nonce in it/);
  });
});

describe('a proxy that misbehaves', () => {
  it('accepting CONNECT then blackholing fails at the tunnel’s TLS within the timeout', async () => {
    const f = await fake((socket) =>
      onHead(socket, (head) => {
        if (head.startsWith('CONNECT '))
          socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
        else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
      }),
    );
    const started = Date.now();
    const r = await probe({ host: f.host, port: f.port }, whoami.target(), { timeoutMs: 400 });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(r.steps.find((s) => s.check === 'connect' && s.step === 'tunnel')).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^timed out after 400 ms opening a tunnel/),
    });
    await until(() => f.open() === 0);
  });

  it('accepting CONNECT then blackholing plain HTTP fails at the tunnel’s status', async () => {
    const f = await fake((socket) =>
      onHead(socket, (head) => {
        if (head.startsWith('CONNECT '))
          socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
      }),
    );
    const r = await probe(
      { host: f.host, port: f.port },
      { connect: whoami.http },
      { timeoutMs: 300 },
    );
    expect(r.failure).toMatchObject({ check: 'connect', step: 'status' });
    expect(r.failure?.message).toMatch(/^timed out after 300 ms waiting for the target/);
  });

  it('closing after the status line fails at status, naming it', async () => {
    const f = await fake((socket) =>
      onHead(socket, () => {
        socket.end('HTTP/1.1 200 OK\r\n');
      }),
    );
    const r = await probe({ host: f.host, port: f.port }, whoami.target());
    expect(r.failure).toEqual({
      check: 'get',
      step: 'status',
      message: "the proxy closed the connection before the answer's head ended",
    });
    // The tunnel is tried too, and fails the same way.
    expect(r.steps.find((s) => s.step === 'tunnel')?.ok).toBe(false);
  });

  it('a reset before any byte reads as the same refusal as a close (our request was unread)', async () => {
    const f = await fake((socket) => onHead(socket, () => socket.resetAndDestroy()));
    const r = await probe({ host: f.host, port: f.port }, { get: whoami.http });
    expect(r.failure).toEqual({
      check: 'get',
      step: 'status',
      message:
        'the proxy closed the connection without answering (a proxy closes at once a client whose source it does not allow)',
    });
  });

  it('a reset after the first bytes still names the reset', async () => {
    const f = await fake((socket) =>
      onHead(socket, () => {
        socket.write('HTTP/1.1 200 OK\r\n', () => setTimeout(() => socket.resetAndDestroy(), 20));
      }),
    );
    const r = await probe({ host: f.host, port: f.port }, { get: whoami.http });
    expect(r.failure?.step).toBe('status');
    expect(r.failure?.message).toBe(
      "the proxy connection failed before the answer's head ended: read ECONNRESET",
    );
  });

  it('closing in the middle of the body fails at nonce', async () => {
    const f = await fake((socket) =>
      onHead(socket, () => {
        socket.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"nonce":');
      }),
    );
    const r = await probe({ host: f.host, port: f.port }, { get: whoami.http });
    expect(r.failure?.step).toBe('nonce');
    expect(r.failure?.message).toMatch(/before the answer's body ended/);
  });

  it('answering something that is not HTTP fails at status', async () => {
    const f = await fake((socket) => onHead(socket, () => socket.end('SSH-2.0-OpenSSH\r\n\r\n')));
    const r = await probe({ host: f.host, port: f.port }, { get: whoami.http });
    expect(r.failure?.message).toBe('the proxy answered something that is not HTTP/1.1');
  });

  it('an endless head is cut at maxAnswerBytes', async () => {
    const f = await fake((socket) =>
      onHead(socket, () => {
        socket.write('HTTP/1.1 200 OK\r\n');
        const junk = `X-Junk: ${'x'.repeat(1000)}\r\n`;
        const t = setInterval(() => {
          if (socket.destroyed) clearInterval(t);
          else socket.write(junk);
        }, 1);
      }),
    );
    const r = await probe(
      { host: f.host, port: f.port },
      { get: whoami.http },
      { maxAnswerBytes: 8192 },
    );
    expect(r.failure?.message).toMatch(/more than 8192 bytes/);
    await until(() => f.open() === 0);
  });

  it('holds one connection at a time and closes every one, whatever happens', async () => {
    const f = await fake((socket) =>
      onHead(socket, (head) => {
        if (head.startsWith('CONNECT '))
          socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
        else
          socket.write('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n');
      }),
    );
    await probe({ host: f.host, port: f.port }, whoami.target(), {
      timeoutMs: 300,
      credentials: { username: 'a', password: 'b' },
    });
    await until(() => f.open() === 0);
    expect(f.peak).toBe(1);
    expect(f.accepted).toBeGreaterThanOrEqual(2);
  });

  it('sends the credential as Proxy-Authorization, and the auth check without it', async () => {
    const f = await fake((socket, request) =>
      onHead(socket, () => {
        const authed = request().includes('Proxy-Authorization: Basic ');
        socket.end(
          authed
            ? 'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'
            : 'HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n',
        );
      }),
    );
    const r = await probe(
      { host: f.host, port: f.port },
      { get: whoami.http },
      {
        credentials: { username: 'user', password: 'pässword' },
      },
    );
    expect(f.received[0]).toContain(
      `Proxy-Authorization: Basic ${Buffer.from('user:pässword').toString('base64')}\r\n`,
    );
    // The GET failed (502); the check without the credential still ran, and passed.
    expect(r.checks.map((c) => `${c.check}:${c.ok}`)).toEqual(['get:false', 'auth:true']);
    expect(f.received[1]).not.toContain('Proxy-Authorization');
    expect(JSON.stringify(r)).not.toContain(Buffer.from('user:pässword').toString('base64'));
  });
});

describe('cancelling', () => {
  it('an aborted signal rejects with ProbeAbortedError and closes the connection', async () => {
    const f = await fake(() => {});
    const ac = new AbortController();
    const p = probe({ host: f.host, port: f.port }, whoami.target(), { signal: ac.signal });
    await until(() => f.accepted === 1);
    ac.abort(new Error('enough'));
    const err = await p.catch((e: unknown) => e);
    expect(ProbeAbortedError.isInstance(err)).toBe(true);
    expect((err as ProbeAbortedError).code).toBe('PROBE_ABORTED');
    expect((err as Error).cause).toEqual(new Error('enough'));
    await until(() => f.open() === 0);
  });

  it('a signal aborted before the call rejects at once', async () => {
    const err = await probe('http://127.0.0.1:1', whoami.target(), {
      signal: AbortSignal.abort(),
    }).catch((e: unknown) => e);
    expect(ProbeAbortedError.isInstance(err)).toBe(true);
  });

  it('misuse is a TypeError', async () => {
    await expect(probe('not a url', whoami.http)).rejects.toThrow(TypeError);
    await expect(probe('http://127.0.0.1:3128', 'ftp://x/')).rejects.toThrow(TypeError);
    await expect(probe('http://127.0.0.1:3128', {})).rejects.toThrow(TypeError);
    await expect(probe({ host: 'h', port: 0 }, whoami.http)).rejects.toThrow(TypeError);
    await expect(probe('http://127.0.0.1:3128', whoami.http, { timeoutMs: 0 })).rejects.toThrow(
      TypeError,
    );
  });
});
