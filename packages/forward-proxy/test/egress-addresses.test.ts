// Peers: none for the picker and its checks (pure functions); the proxy in process and the proxy
// program for the rest, with an origin on 127.0.0.1 that answers with the source address it saw.
// The many addresses are loopback addresses here (127.0.7.x); test/egress-sessions.test.ts has
// sessions, test/egress-addresses-netns.test.ts the IPv6 prefix.
import type { LookupAddress } from 'node:dns';
import { createServer as createHttpServer, request, type Server } from 'node:http';
import {
  createServer as createTcpServer,
  type LookupFunction,
  type Server as TcpServer,
} from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  egressAddressesProblems,
  egressAddressSet,
  MAX_EGRESS_ADDRESSES,
} from '../src/egress-addresses.js';
import {
  connectFrom,
  egressAddressPicker,
  outgoingAddressFor,
  sourceFor,
} from '../src/outgoing.js';
import { startForwardProxy } from '../src/proxy.js';
import {
  freePort,
  killAllSpawned,
  LOOPBACK_ORIGINS,
  listen,
  startProgram,
  stopProgram,
  tunnel,
} from './support.js';

const LIST = Array.from({ length: 16 }, (_, i) => `127.0.7.${i + 2}`);

/** Whether `a` is in 2001:db8:1::/64, written as `formatIp` writes it. */
const inDocPrefix = (a: string | undefined) => a !== undefined && /^2001:db8:1:0?:/.test(a);

describe('egress.addresses: the checks', () => {
  it('takes an IPv6 prefix, a list of addresses, and a list with one prefix beside IPv4 addresses', () => {
    expect(egressAddressesProblems(undefined)).toEqual([]);
    expect(egressAddressesProblems('2001:db8:1::/64')).toEqual([]);
    expect(egressAddressesProblems('2001:db8:1::/48')).toEqual([]);
    expect(egressAddressesProblems('2001:db8:1::7/128')).toEqual([]);
    expect(egressAddressesProblems(['192.0.2.10', '192.0.2.11', '2001:db8::5'])).toEqual([]);
    expect(egressAddressesProblems(['2001:db8:1::/64', '192.0.2.10'])).toEqual([]);
  });

  it('names the field and the fix for each bad entry', () => {
    const one = (v: unknown, outgoing?: string) => egressAddressesProblems(v, outgoing).join('\n');
    expect(one('2001:db8::/129')).toBe(
      'egress.addresses: "2001:db8::/129" has no valid prefix length; an IPv6 prefix is /48 to /128, such as 2001:db8:1::/64',
    );
    expect(one('2001:db8::/32')).toBe(
      'egress.addresses: "2001:db8::/32" is shorter than /48; give the /48 to /128 prefix routed to this host',
    );
    expect(one('2001:db8:1::5/64')).toBe(
      'egress.addresses: "2001:db8:1::5/64" has bits set past its prefix length; write 2001:db8:1::/64',
    );
    expect(one(['192.0.2.0/24'])).toMatch(
      /^egress\.addresses\[0\]: "192\.0\.2\.0\/24" is an IPv4 range; list the IPv4 addresses/,
    );
    expect(one(['192.0.2.10', 'eth0'])).toMatch(
      /^egress\.addresses\[1\]: "eth0" is not an address or an IPv6 prefix; write 2001:db8:1::\/64 or 192\.0\.2\.10$/,
    );
    expect(one(['192.0.2.10', 7])).toMatch(/^egress\.addresses\[1\]: 7 is not an address/);
    expect(one(['::'])).toMatch(/"::" is the unspecified address \(leave egress\.addresses out/);
    expect(one(['0.0.0.0'])).toMatch(/is the unspecified address/);
    expect(one(['ff02::1'])).toMatch(/"ff02::1" is a multicast address; a connection cannot leave/);
    expect(one(['224.0.0.1'])).toMatch(/is a multicast address/);
    expect(one(['255.255.255.255'])).toMatch(/is the broadcast address/);
    expect(one(['192.0.2.10', '192.0.2.10'])).toBe(
      'egress.addresses[1]: "192.0.2.10" is listed twice; list it once',
    );
    expect(one(['2001:db8::1', '2001:db8:0::1'])).toMatch(/\[1\]: "2001:db8:0::1" is listed twice/);
    expect(one(['2001:db8:1::/64', '2001:db8:2::/64'])).toBe(
      "egress.addresses: lists 2 IPv6 prefixes; give one (the host's /64, say)",
    );
    expect(one(['2001:db8:1::/64', '2001:db8:2::1'])).toMatch(
      /^egress\.addresses: lists an IPv6 prefix and IPv6 addresses; give the prefix alone for IPv6/,
    );
    for (const bad of [[], {}, 7, null, Array(MAX_EGRESS_ADDRESSES + 1).fill('192.0.2.1')]) {
      expect(one(bad)).toMatch(
        /^egress\.addresses: must be an IPv6 prefix such as "2001:db8:1::\/64", or a list of 1 to 1024 addresses/,
      );
    }
    expect(one('2001:db8:1::/64', '192.0.2.7')).toBe(
      'egress.addresses: cannot be used with outgoingAddress; drop outgoingAddress, or list that address in egress.addresses',
    );
  });

  it('the proxy refuses to start with a bad set, naming every problem; the policy beside it is read as before', async () => {
    const start = (egress: Record<string, unknown>, outgoingAddress?: string) =>
      startForwardProxy({
        name: 'bad',
        address: '127.0.0.1',
        port: 0,
        allowedSources: ['127.0.0.0/8'],
        egress,
        outgoingAddress,
      } as Parameters<typeof startForwardProxy>[0]);
    await expect(start({ addresses: ['2001:db8::/40', '10.0.0.0/8'] })).rejects.toThrow(
      new TypeError(
        'egress.addresses[0]: "2001:db8::/40" is shorter than /48; give the /48 to /128 prefix routed to this host\n' +
          'egress.addresses[1]: "10.0.0.0/8" is an IPv4 range; list the IPv4 addresses the host has one by one (192.0.2.10, 192.0.2.11)',
      ),
    );
    await expect(start({ addresses: '2001:db8:1::/64' }, '127.0.0.9')).rejects.toThrow(
      /cannot be used with outgoingAddress/,
    );
    await expect(start({ addresses: '2001:db8:1::/64', allow: ['nope/'] })).rejects.toThrow(
      /egress\.allow\[0\]/,
    );
  });
});

describe('egress.addresses: the picker', () => {
  it('gives one session the same address every time, and sessions addresses all over a /64', () => {
    const set = egressAddressSet('2001:db8:1::/64');
    if (set === undefined) throw new Error('no set');
    expect(set.families).toEqual([6]);
    const first = Array.from({ length: 1000 }, (_, i) => set.pick(6, `s${i}`));
    const again = Array.from({ length: 1000 }, (_, i) => set.pick(6, `s${i}`));
    expect(again).toEqual(first);
    expect(first.every(inDocPrefix)).toBe(true);
    expect(new Set(first).size).toBe(1000);
  });

  it('without a session, picks at random', () => {
    const set = egressAddressSet('2001:db8:1::/64');
    const picks = Array.from({ length: 200 }, () => set?.pick(6));
    expect(picks.every(inDocPrefix)).toBe(true);
    expect(new Set(picks).size).toBe(200);
    const list = egressAddressSet(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']);
    const fromList = Array.from({ length: 200 }, () => list?.pick(4));
    expect(new Set(fromList)).toEqual(
      new Set(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']),
    );
  });

  it('spreads sessions over a list, each kept on one element', () => {
    const set = egressAddressSet(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']);
    const bySession = Array.from({ length: 100 }, (_, i) => set?.pick(4, `user-${i}`));
    expect(new Set(bySession).size).toBe(4);
    expect(Array.from({ length: 100 }, (_, i) => set?.pick(4, `user-${i}`))).toEqual(bySession);
  });

  it('a key per set: another process (another set) maps a session elsewhere', () => {
    const a = egressAddressSet('2001:db8:1::/64');
    const b = egressAddressSet('2001:db8:1::/64');
    const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`);
    expect(sessions.map((s) => a?.pick(6, s))).not.toEqual(sessions.map((s) => b?.pick(6, s)));
  });

  it('a /128 is its one address; a prefix never gives its first address', () => {
    const one = egressAddressSet('2001:db8:1::7/128');
    expect(one?.pick(6, 'x')).toBe('2001:db8:1::7');
    expect(one?.pick(6)).toBe('2001:db8:1::7');
    const two = egressAddressSet('2001:db8:1::/127');
    const picks = new Set(Array.from({ length: 50 }, (_, i) => two?.pick(6, `s${i}`)));
    expect(picks).toEqual(new Set(['2001:db8:1::1']));
  });

  it('keeps the families apart: no address of a family the set lacks', () => {
    const v6 = egressAddressSet('2001:db8:1::/64');
    expect(v6?.pick(4, 's')).toBeUndefined();
    const both = egressAddressSet(['2001:db8:1::/64', '192.0.2.10']);
    expect(both?.families).toEqual([4, 6]);
    expect(both?.pick(4, 's')).toBe('192.0.2.10');
    expect(inDocPrefix(both?.pick(6, 's'))).toBe(true);
    const pick = egressAddressPicker(v6 as NonNullable<typeof v6>);
    expect(pick('192.0.2.1', 's')).toBeUndefined();
    expect(pick('example.com', 's')).toBeUndefined();
    expect(pick('2001:db8:2::1', 's')).toBe(v6?.pick(6, 's'));
    expect(pick.byAddress).toBe(true);
    expect(pick.bySession).toBe(true);
    expect(outgoingAddressFor('192.0.2.7').byAddress).toBeUndefined();
  });

  it('for a resolved name, takes the first family the set has, in the resolver order, else none', () => {
    const v6 = egressAddressPicker(egressAddressSet('2001:db8:1::/64') as never);
    const dual: LookupAddress[] = [
      { address: '192.0.2.1', family: 4 },
      { address: '2001:db8:2::1', family: 6 },
      { address: '2001:db8:2::2', family: 6 },
    ];
    const chosen = sourceFor(v6, 's', dual);
    expect(chosen.addresses).toEqual(dual.slice(1));
    expect(chosen.localAddress).toBe(v6('2001:db8:2::1', 's'));
    const v4only: LookupAddress[] = [{ address: '192.0.2.1', family: 4 }];
    expect(sourceFor(v6, 's', v4only)).toEqual({ localAddress: undefined, addresses: v4only });
    const both = egressAddressPicker(egressAddressSet(['2001:db8:1::/64', '192.0.2.10']) as never);
    expect(sourceFor(both, 's', dual)).toEqual({
      localAddress: '192.0.2.10',
      addresses: dual.slice(0, 1),
    });
  });
});

describe('egress.addresses: connections', () => {
  let origin: { server: Server; port: number };
  let echo: { server: TcpServer; port: number };

  beforeAll(async () => {
    // The origin closes each connection, so every request is a connection of its own.
    const server = createHttpServer((req, res) => {
      res.setHeader('connection', 'close');
      res.end(req.socket.remoteAddress);
    });
    origin = { server, port: await listen(server) };
    const e = createTcpServer((s) => s.end(s.remoteAddress ?? ''));
    echo = { server: e, port: await listen(e) };
  });

  afterAll(async () => {
    origin?.server.close();
    echo?.server.close();
    await killAllSpawned();
  });

  /** A GET through `proxy`, on a connection of its own, with `headers`; resolves with the body. */
  const get = (
    proxy: { address: string; port: number },
    url: string,
    headers: Record<string, string> = {},
  ) =>
    new Promise<string>((resolve, reject) => {
      const req = request({
        host: proxy.address,
        port: proxy.port,
        path: url,
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
      req.on('error', reject);
      req.end();
    });

  /** What the TCP origin saw through a tunnel: the address it writes, then closes. */
  async function throughTunnel(proxy: { address: string; port: number }, target: string) {
    const t = await tunnel(proxy, target);
    expect(t.status).toBe(200);
    return new Promise<string>((resolve) => {
      let text = '';
      t.socket.setEncoding('utf8');
      t.socket.on('data', (d: string) => {
        text += d;
      });
      t.socket.on('close', () => resolve(text));
    });
  }

  it('a proxy without sessions spreads its connections over the list, HTTP and CONNECT alike', async () => {
    const proxy = await startForwardProxy({
      name: 'many',
      address: '127.0.7.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: { ...LOOPBACK_ORIGINS, addresses: LIST.slice(0, 4) },
    });
    try {
      const plain: string[] = [];
      for (let i = 0; i < 100; i++) {
        plain.push(await get(proxy.address, `http://127.0.0.1:${origin.port}/`));
      }
      expect(new Set(plain)).toEqual(new Set(LIST.slice(0, 4)));
      // A name is resolved before the connection, and the source picked for its address.
      const named = await get(proxy.address, `http://localhost:${origin.port}/`);
      expect(LIST.slice(0, 4)).toContain(named);
      const tunnels: string[] = [];
      for (let i = 0; i < 100; i++) {
        tunnels.push(await throughTunnel(proxy.address, `127.0.0.1:${echo.port}`));
      }
      expect(new Set(tunnels)).toEqual(new Set(LIST.slice(0, 4)));
    } finally {
      await proxy.close();
    }
  });

  it('an IPv4 destination of a proxy with an IPv6 prefix leaves from the source the system picks', async () => {
    const proxy = await startForwardProxy({
      name: 'v6',
      address: '127.0.7.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: { ...LOOPBACK_ORIGINS, addresses: '2001:db8:1::/64' },
    });
    try {
      expect(await get(proxy.address, `http://127.0.0.1:${origin.port}/`)).toBe('127.0.0.1');
      expect(await throughTunnel(proxy.address, `127.0.0.1:${echo.port}`)).toBe('127.0.0.1');
    } finally {
      await proxy.close();
    }
  });

  it('a name resolved first is still held to the destination policy', async () => {
    const proxy = await startForwardProxy({
      name: 'policy',
      address: '127.0.7.1',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: { httpPorts: ['1-65535'], addresses: LIST.slice(0, 4) },
    });
    try {
      // localhost resolves to a loopback address, which the default policy refuses.
      expect(await get(proxy.address, `http://localhost:${origin.port}/`)).toBe('403');
    } finally {
      await proxy.close();
    }
  });

  it('the program reads egress.addresses from its config file', async () => {
    const address = '127.0.7.1';
    const p = await startProgram({
      address,
      port: await freePort(address),
      allowedSources: ['127.0.0.0/8'],
      egress: { ...LOOPBACK_ORIGINS, addresses: LIST.slice(0, 2) },
    });
    try {
      const from = await get(p, `http://127.0.0.1:${origin.port}/`);
      expect(LIST.slice(0, 2)).toContain(from);
    } finally {
      await stopProgram(p);
    }
  });
});

describe('connectFrom', () => {
  let server: TcpServer;
  let port: number;
  const got: { from: string | undefined; data: string }[] = [];

  beforeAll(async () => {
    server = createTcpServer((s) => {
      let data = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => {
        data += d;
      });
      s.on('end', () => {
        got.push({ from: s.remoteAddress, data });
        s.end('bye');
      });
    });
    port = await listen(server);
  });

  afterAll(() => server?.close());

  const picker = egressAddressPicker(egressAddressSet(['127.0.7.30']) as never);

  it('for a name: what is written and the end before the connection wait for it', async () => {
    const socket = connectFrom(picker, 's', { host: 'localhost', port, family: 4 });
    socket.write('early ');
    socket.end('bytes');
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        text += d;
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toBe('bye');
    expect(got.at(-1)).toEqual({ from: '127.0.7.30', data: 'early bytes' });
  });

  it('passes the lookup error on (a refused destination keeps its code), and a destroy before it stops the connection', async () => {
    const refused: LookupFunction = (_h, _o, cb) =>
      setImmediate(() =>
        (cb as (e: Error) => void)(Object.assign(new Error('refused'), { code: 'TEST_REFUSED' })),
      );
    const socket = connectFrom(picker, 's', { host: 'example.test', port, lookup: refused });
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => socket.on('error', resolve));
    expect(err.code).toBe('TEST_REFUSED');

    let answered = () => {};
    const lookedUp = new Promise<void>((r) => {
      answered = r;
    });
    const late: LookupFunction = (_h, _o, cb) =>
      setImmediate(() => {
        (cb as (e: null, a: LookupAddress[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
        answered();
      });
    const gone = connectFrom(picker, 's', { host: 'example.test', port, lookup: late });
    const errors: Error[] = [];
    gone.on('error', (e) => errors.push(e));
    gone.destroy();
    await lookedUp;
    await new Promise((r) => setImmediate(r));
    expect(gone.destroyed).toBe(true);
    expect(gone.connecting).toBe(false);
    expect(errors).toEqual([]);
  });
});
