// Peer: Node's own HTTP client and TCP sockets on loopback against the image server and the relay.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, connect as tcpConnect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startImageServer, startRelay } from '../src/index.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function get(
  url: string,
): Promise<{ status: number; length: string | null; body: Buffer | Error }> {
  const res = await fetch(url);
  const length = res.headers.get('content-length');
  try {
    return { status: res.status, length, body: Buffer.from(await res.arrayBuffer()) };
  } catch (err) {
    return { status: res.status, length, body: err as Error };
  }
}

describe('startImageServer', () => {
  it('serves bytes with their length and counts requests, and misbehaves on demand', async () => {
    const images = await startImageServer();
    try {
      const data = randomBytes(200_000);
      expect(await images.serve('/i.img', data)).toBe(sha(data));
      const ok = await get(images.url('/i.img'));
      expect([ok.status, ok.length, sha(ok.body as Buffer)]).toEqual([200, '200000', sha(data)]);
      images.mode('/i.img', 'corrupt');
      const corrupt = (await get(images.url('/i.img'))).body as Buffer;
      expect(corrupt.length).toBe(data.length);
      expect(corrupt.equals(data)).toBe(false);
      images.mode('/i.img', 'no-length');
      const chunked = await get(images.url('/i.img'));
      expect([chunked.length, sha(chunked.body as Buffer)]).toEqual([null, sha(data)]);
      images.mode('/i.img', 'short');
      expect((await get(images.url('/i.img'))).body).toBeInstanceOf(Error);
      images.mode('/i.img', { status: 503 });
      expect((await get(images.url('/i.img'))).status).toBe(503);
      expect((await get(images.url('/missing'))).status).toBe(404);
      expect(images.requests('/i.img')).toBe(5);
    } finally {
      await images.close();
    }
  });
});

describe('startRelay', () => {
  it('relays both ways and cuts a connection that sends more than its limit', async () => {
    const echo = createServer((s) => s.pipe(s));
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    const relay = await startRelay((echo.address() as { port: number }).port);
    try {
      const a = tcpConnect(relay.port, '127.0.0.1');
      await once(a, 'connect');
      a.write('hello');
      expect(String((await once(a, 'data'))[0])).toBe('hello');
      a.destroy();
      relay.cutAfter(1000);
      const b = tcpConnect(relay.port, '127.0.0.1');
      await once(b, 'connect');
      b.on('data', () => {});
      b.write(Buffer.alloc(2000));
      await once(b, 'close');
      expect([relay.accepted, relay.cut]).toEqual([2, 1]);
    } finally {
      await relay.close();
      echo.close();
    }
  });
});
