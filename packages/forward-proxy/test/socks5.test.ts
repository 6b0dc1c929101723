// Peers: curl (`--socks5-hostname`, the real client) and the `socks` client library from npm
// (every address type, user name and password, BIND and UDP ASSOCIATE), through the proxy in
// this process to local origins on 127.0.0.0/8 and ::1; the password file on disk.
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '@proxy-op/htpasswd';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import { SocksClient, type SocksClientOptions } from 'socks';
import * as vitest from 'vitest';
import { type ForwardProxy, startForwardProxy } from '../src/index.js';
import { Reply, replyFor } from '../src/socks5.js';
import { LOOPBACK_ORIGINS, startOrigin } from './support.js';

const { afterAll, beforeAll, describe, expect, it } = vitest;

const alice = { user: 'alice', password: 'SENTINEL-socks-77e1-pass' };

/** Sends a plain GET over an open socket and resolves with the whole answer. */
async function getOver(socket: Socket, host: string, path = '/'): Promise<string> {
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'end');
  socket.destroy();
  return Buffer.concat(chunks).toString('utf8');
}

/** What a SOCKS5 connect through `proxy` to `destination` comes to: the socket, or the error's message. */
async function socksConnect(
  proxy: ForwardProxy,
  destination: SocksClientOptions['destination'],
  creds?: { user: string; password: string },
  command: SocksClientOptions['command'] = 'connect',
): Promise<Socket | string> {
  try {
    const { socket } = await SocksClient.createConnection({
      proxy: {
        host: proxy.address.address,
        port: proxy.address.port,
        type: 5,
        ...(creds === undefined ? {} : { userId: creds.user, password: creds.password }),
      },
      command,
      destination,
      timeout: 5_000,
    });
    return socket;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('SOCKS5 on the proxy port', () => {
  let dir: string;
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let origin6: Server;
  let port6: number;
  let open: ForwardProxy;
  let authed: ForwardProxy;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-socks-'));
    origin = await startOrigin();
    origin6 = createServer((req, res) => res.end(`v6 ${req.url}`));
    await new Promise<void>((r) => origin6.listen({ host: '::1', port: 0 }, r));
    port6 = (origin6.address() as AddressInfo).port;
    const passwd = join(dir, 'passwd');
    await writeFile(passwd, `${alice.user}:${hashPassword(alice.password)}\n`);
    open = await startForwardProxy({
      name: 'socks-open',
      address: '127.0.0.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: LOOPBACK_ORIGINS,
      accessLog: join(dir, 'open.log'),
    });
    authed = await startForwardProxy({
      name: 'socks-auth',
      address: '127.0.0.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      // Loopback origins, and the metadata address refused by the defaults it keeps.
      egress: LOOPBACK_ORIGINS,
      auth: { realm: 'proxy-op socks', passwordFile: passwd },
    });
  });

  afterAll(async () => {
    await open?.close(0);
    await authed?.close(0);
    origin?.server.close();
    origin6?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('carries a CONNECT to an IPv4 address, an IPv6 address and a domain name', async () => {
    const v4 = await socksConnect(open, { host: '127.0.0.1', port: origin.port });
    expect(typeof v4).not.toBe('string');
    expect(await getOver(v4 as Socket, `127.0.0.1:${origin.port}`, '/four')).toContain(
      '"path":"/four"',
    );
    const v6 = await socksConnect(open, { host: '::1', port: port6 });
    expect(typeof v6).not.toBe('string');
    expect(await getOver(v6 as Socket, `[::1]:${port6}`, '/six')).toContain('v6 /six');
    const named = await socksConnect(open, { host: 'localhost', port: origin.port });
    expect(typeof named).not.toBe('string');
    expect(await getOver(named as Socket, `localhost:${origin.port}`, '/name')).toContain(
      '"path":"/name"',
    );
  });

  it('writes one access-log line per tunnel, as for HTTP CONNECT', async () => {
    const s = await socksConnect(open, { host: '127.0.0.1', port: origin.port });
    await getOver(s as Socket, `127.0.0.1:${origin.port}`, '/logged');
    await vitest.vi.waitFor(async () => {
      const lines = (await readFile(join(dir, 'open.log'), 'utf8')).trim().split('\n');
      const last = JSON.parse(lines.at(-1) ?? '{}');
      expect(last).toMatchObject({
        method: 'CONNECT',
        target: `127.0.0.1:${origin.port}`,
        status: 200,
      });
      expect(last.bytesOut).toBeGreaterThan(0);
    });
  });

  it('refuses what the destination policy refuses, with "not allowed by ruleset"', async () => {
    // The metadata address, and the proxy itself: refused whatever the allow list says.
    const metadata = await socksConnect(open, { host: '169.254.169.254', port: 80 });
    expect(metadata).toMatch(/Socks5 proxy rejected connection - NotAllowed/i);
    const itself = await socksConnect(open, { host: '127.0.0.1', port: open.address.port });
    expect(itself).toMatch(/NotAllowed/i);
    expect(replyFor(403)).toBe(Reply.notAllowed);
  });

  it('answers a refused connection and an unknown host with their own replies', async () => {
    const closed = await socksConnect(open, { host: '127.0.0.1', port: 1 });
    expect(closed).toMatch(/ConnectionRefused/i);
    expect(replyFor(502, 'ENOTFOUND')).toBe(Reply.hostUnreachable);
    expect(replyFor(504)).toBe(Reply.hostUnreachable);
  });

  it('refuses BIND and UDP ASSOCIATE as commands not supported, and an unknown address type', async () => {
    const raw = async (request: number[]): Promise<number[]> => {
      const s = connect({ host: '127.0.0.1', port: open.address.port });
      await once(s, 'connect');
      const got: number[] = [];
      s.on('data', (c: Buffer) => got.push(...c));
      s.write(Buffer.from([5, 1, 0])); // one method: none
      s.write(Buffer.from(request));
      await once(s, 'close');
      return got;
    };
    const bind = [5, 2, 0, 1, 127, 0, 0, 1, 0, 80];
    const associate = [5, 3, 0, 1, 0, 0, 0, 0, 0, 0];
    // The method chosen (5 0), then the reply: version, code, reserved, an IPv4 0.0.0.0:0.
    const notSupported = [5, 0, 5, Reply.commandNotSupported, 0, 1, 0, 0, 0, 0, 0, 0];
    expect(await raw(bind)).toEqual(notSupported);
    expect(await raw(associate)).toEqual(notSupported);
    expect(await raw([5, 1, 0, 9, 1, 2, 3, 4, 0, 80])).toEqual([
      5,
      0,
      5,
      Reply.addressTypeNotSupported,
      0,
      1,
      0,
      0,
      0,
      0,
      0,
      0,
    ]);
  });

  it('asks for the user name and password the password file holds, and takes no other', async () => {
    const none = await socksConnect(authed, { host: '127.0.0.1', port: origin.port });
    expect(none).toMatch(/no accepted authentication type/i);
    const wrong = await socksConnect(
      authed,
      { host: '127.0.0.1', port: origin.port },
      { user: alice.user, password: 'not-it' },
    );
    expect(wrong).toMatch(/Authentication failed/i);
    expect(wrong).not.toContain('not-it');
    const right = await socksConnect(authed, { host: '127.0.0.1', port: origin.port }, alice);
    expect(typeof right).not.toBe('string');
    expect(await getOver(right as Socket, `127.0.0.1:${origin.port}`, '/authed')).toContain(
      '"path":"/authed"',
    );
  });

  it('a gateway takes SOCKS5 in and goes out to its member with HTTP CONNECT', async () => {
    const gateway = await startForwardProxy({
      name: 'socks-gateway',
      address: '127.0.0.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: LOOPBACK_ORIGINS,
      parents: { upstreams: [{ name: 'member-a', url: `http://127.0.0.1:${open.address.port}` }] },
    });
    try {
      const s = await socksConnect(gateway, { host: 'localhost', port: origin.port });
      expect(typeof s).not.toBe('string');
      expect(await getOver(s as Socket, `localhost:${origin.port}`, '/via-gateway')).toContain(
        '"path":"/via-gateway"',
      );
      expect(gateway.parentStats().map((p) => [p.name, p.tunnels])).toEqual([['member-a', 1]]);
      // The member refuses the metadata address; the gateway's own policy refuses it first.
      expect(await socksConnect(gateway, { host: '169.254.169.254', port: 80 })).toMatch(
        /NotAllowed/i,
      );
    } finally {
      await gateway.close(0);
    }
  });

  it('still reads HTTP on the same port', async () => {
    const r = await fetch(`http://127.0.0.1:${open.address.port}/healthz`);
    expect(r.status).toBe(200);
  });

  describeWithPeers(vitest, 'with curl', ['curl'], () => {
    it('curl --socks5-hostname with a user and password reaches the origin', async () => {
      const r = await runProcess('curl', [
        '-sS',
        '--max-time',
        '10',
        '--socks5-hostname',
        `127.0.0.1:${authed.address.port}`,
        '--proxy-user',
        `${alice.user}:${alice.password}`,
        `http://localhost:${origin.port}/curl`,
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('"path":"/curl"');
    });

    it('curl --socks5 to the metadata address fails with the ruleset refusal', async () => {
      const r = await runProcess('curl', [
        '-sS',
        '--max-time',
        '10',
        '--socks5',
        `127.0.0.1:${open.address.port}`,
        'http://169.254.169.254/latest/meta-data/',
      ]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/not allowed|connection to 169\.254\.169\.254|SOCKS5/i);
    });
  });
});
