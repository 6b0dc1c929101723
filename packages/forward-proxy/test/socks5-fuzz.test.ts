// Peer: the proxy in this process, with a password file, and a local origin. The SOCKS5 handshake
// fuzzer, beside the HTTP one (fuzz.test.ts): seeded, deterministic handshakes (greeting, user
// name and password, request), valid ones mutated with the edits a careless or hostile client
// makes (bytes flipped, lengths that lie, cut short, bytes inserted, stages out of order). Each
// must end in one of the protocol's answers and a closed connection, or a tunnel to the one
// destination the valid handshake names; the proxy must survive, hold no connection at the end,
// and still serve a clean handshake.
//
// FUZZ_SEED picks another seed (the run prints the one it used).
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '@proxy-op/htpasswd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ForwardProxy, startForwardProxy } from '../src/index.js';
import { Random } from './fuzz.js';
import { eventually, LOOPBACK_ORIGINS, startOrigin } from './support.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_207);
const INPUTS = 300;
const user = { name: 'fuzz', password: 'SENTINEL-fuzz-0c2d' };

/** A valid handshake to 127.0.0.1:`port` with the user name and password. */
function validHandshake(port: number): Buffer[] {
  const u = Buffer.from(user.name);
  const p = Buffer.from(user.password);
  return [
    Buffer.from([5, 2, 0, 2]),
    Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]),
    Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, port >> 8, port & 0xff]),
  ];
}

/** One mutation of a handshake's stages. */
function mutate(r: Random, stages: Buffer[]): Buffer[] {
  const out = stages.map((s) => Buffer.from(s));
  const at = r.int(out.length);
  const s = out[at] as Buffer;
  switch (r.int(6)) {
    case 0: // a byte flipped
      s[r.int(s.length)] = r.int(256);
      break;
    case 1: // a length that lies
      s[1] = r.pick([0, 1, 255, (s[1] ?? 0) + 1, Math.max(0, (s[1] ?? 0) - 1)]);
      break;
    case 2: // cut short, the rest never sent
      return [...out.slice(0, at), s.subarray(0, r.int(s.length))];
    case 3: // bytes inserted
      out[at] = Buffer.concat([
        s.subarray(0, r.int(s.length)),
        Buffer.from(Array.from({ length: 1 + r.int(8) }, () => r.int(256))),
        s,
      ]);
      break;
    case 4: // stages out of order
      out.reverse();
      break;
    default: // everything in one write, with garbage after it
      return [Buffer.concat([...out, Buffer.from([r.int(256), r.int(256)])])];
  }
  return out;
}

describe('SOCKS5 handshake fuzzer', () => {
  let dir: string;
  let proxy: ForwardProxy;
  let origin: Awaited<ReturnType<typeof startOrigin>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-socks-fuzz-'));
    const passwd = join(dir, 'passwd');
    await writeFile(passwd, `${user.name}:${hashPassword(user.password)}\n`);
    origin = await startOrigin();
    proxy = await startForwardProxy({
      name: 'socks-fuzz',
      address: '127.0.4.61',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: LOOPBACK_ORIGINS,
      auth: { realm: 'fuzz', passwordFile: passwd },
      // Handshakes that stall are cut soon; failed credentials are not rate limited here.
      limits: { headersTimeoutMs: 300, maxAuthFailures: 1_000_000, authFailureRefillMs: 1 },
    });
  });

  afterAll(async () => {
    await proxy?.close(0);
    origin?.server.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it(`answers ${INPUTS} mutated handshakes with the protocol's answers only, and survives`, async () => {
    console.info(`socks5 fuzz seed ${SEED}`);
    const r = new Random(SEED);
    const stuck: string[] = [];
    let tunnels = 0;
    for (let i = 0; i < INPUTS; i++) {
      const stages =
        i % 10 === 0 ? validHandshake(origin.port) : mutate(r, validHandshake(origin.port));
      const s = connect({ host: proxy.address.address, port: proxy.address.port });
      await once(s, 'connect');
      const got: number[] = [];
      s.on('data', (c: Buffer) => got.push(...c));
      s.on('error', () => {});
      for (const stage of stages) s.write(stage);
      // A tunnel that opened is used once and ended; anything else must end on its own.
      const closed = once(s, 'close');
      const deadline = setTimeout(() => s.destroy(), 3_000);
      await new Promise((res) => setTimeout(res, 20));
      const reply = Buffer.from(got);
      if (reply.includes(Buffer.from([1, 0, 5, 0, 0, 1]))) {
        tunnels++;
        s.end(`GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      }
      await closed;
      clearTimeout(deadline);
      const bytes = Buffer.from(got);
      // A first byte of 5 is SOCKS5, answered with a method choice (5, method) or nothing; any
      // other first byte (or none at all) is HTTP, answered as HTTP (a 408 for silence) or not.
      const first = Buffer.concat(stages)[0];
      const ok =
        bytes.length === 0 ||
        (first === 5 ? bytes[0] === 5 : bytes.toString('latin1').startsWith('HTTP/1.1 '));
      if (!ok) {
        const sent = Buffer.concat(stages).toString('hex');
        stuck.push(`input ${i}: sent ${sent}, answer ${bytes.toString('hex')}`);
      }
    }
    expect(stuck).toEqual([]);
    expect(tunnels).toBeGreaterThanOrEqual(INPUTS / 10);
    expect(await eventually(() => proxy.connections() === 0, 5_000)).toBe(true);
    // A clean handshake still works.
    const s = connect({ host: proxy.address.address, port: proxy.address.port });
    await once(s, 'connect');
    const got: number[] = [];
    s.on('data', (c: Buffer) => got.push(...c));
    for (const stage of validHandshake(origin.port)) s.write(stage);
    expect(await eventually(() => got.length >= 14, 5_000)).toBe(true);
    expect(got.slice(0, 14)).toEqual([5, 2, 1, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    s.destroy();
  }, 120_000);
});
