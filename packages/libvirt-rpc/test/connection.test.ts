// Peer: a wire-level fake server in process (test/support/fake-server.ts) over a Duplex pair.
import { duplexPair, Readable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import {
  connect,
  duplexDialer,
  encodePacket,
  type Header,
  KEEPALIVE_PROGRAM,
  LibvirtClient,
  LibvirtError,
  MessageStatus,
  MessageType,
  procedures,
  REMOTE_PROGRAM,
  RpcError,
  remoteErrorCodec,
  xdr,
} from '../src/index.js';
import { errorBody, FakeServer, type Packet, pair } from './support/fake-server.js';

const P = procedures;
const lib = (v: number) => xdr.encode(P.connectGetLibVersion.ret, { libVer: v });

describe('calls on one connection', () => {
  it('matches replies to calls by serial, whatever order they come in', async () => {
    const { conn, server } = pair();
    const calls = [0, 1, 2].map(() => conn.call(P.connectGetLibVersion, undefined));
    const got = [await server.next(), await server.next(), await server.next()];
    expect(new Set(got.map((g) => g.header.serial)).size).toBe(3);
    // Answer in reverse order, each call with its own version number.
    for (const [i, g] of [...got.entries()].reverse()) server.reply(g.header, lib(1000 + i));
    expect(await Promise.all(calls)).toEqual([
      { libVer: 1000 },
      { libVer: 1001 },
      { libVer: 1002 },
    ]);
    conn.destroy();
  });

  it('resolves each call with its own reply', async () => {
    const { conn, server } = pair();
    const a = conn.call(P.connectGetLibVersion, undefined);
    const b = conn.call(P.connectGetLibVersion, undefined);
    const ca = await server.next();
    const cb = await server.next();
    server.reply(cb.header, lib(2));
    server.reply(ca.header, lib(1));
    expect(await a).toEqual({ libVer: 1 });
    expect(await b).toEqual({ libVer: 2 });
    conn.destroy();
  });

  it('turns an error reply into a LibvirtError with code, domain, level and message', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const p = c.domainLookupByName('nope');
    const call = await server.next();
    server.replyError(call.header, 42, 'Domain not found');
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err).toMatchObject({
      code: 42,
      domain: 10,
      level: 2,
      message: 'Domain not found',
      procedure: 'DOMAIN_LOOKUP_BY_NAME',
    });
    conn.destroy();
  });

  it('rejects a reply with leftover bytes as a protocol error and keeps the connection', async () => {
    const { conn, server } = pair();
    const p = conn.call(P.connectGetLibVersion, undefined);
    const call = await server.next();
    server.reply(call.header, Buffer.concat([lib(1), Buffer.alloc(4)]));
    await expect(p).rejects.toMatchObject({ code: 'ERR_RPC_PROTOCOL' });
    const q = conn.call(P.connectGetLibVersion, undefined);
    server.reply((await server.next()).header, lib(7));
    expect(await q).toEqual({ libVer: 7 });
    conn.destroy();
  });

  it('refuses invalid arguments before sending anything', async () => {
    const { conn, server } = pair();
    await expect(
      conn.call(P.domainGetState, { dom: { name: 'x', uuid: new Uint8Array(3), id: 1 }, flags: 0 }),
    ).rejects.toThrow(/remote_nonnull_domain|opaque/);
    expect(server.received).toHaveLength(0);
    conn.destroy();
  });
});

describe('abandoned calls', () => {
  it('drops a cancelled call by serial; its late reply does not reach the next call', async () => {
    const { conn, server } = pair();
    const ac = new AbortController();
    const first = conn.call(P.connectGetLibVersion, undefined, { signal: ac.signal });
    const firstCall = await server.next();
    ac.abort(new Error('caller gave up'));
    const err = await first.catch((e: unknown) => e);
    expect(RpcError.isInstance(err) && err.code).toBe('ERR_RPC_ABORTED');
    expect((err as Error).cause).toMatchObject({ message: 'caller gave up' });
    expect(conn.abandonedCount).toBe(1);

    const second = conn.call(P.connectGetLibVersion, undefined);
    const secondCall = await server.next();
    server.reply(firstCall.header, lib(111)); // late reply to the abandoned call
    server.reply(secondCall.header, lib(222));
    expect(await second).toEqual({ libVer: 222 });
    expect(conn.abandonedCount).toBe(0);
    expect(conn.isOpen).toBe(true);
    conn.destroy();
  });

  it('rejects at once when the signal has already fired, sending nothing', async () => {
    const { conn, server } = pair();
    await expect(
      conn.call(P.connectGetLibVersion, undefined, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ code: 'ERR_RPC_ABORTED' });
    expect(server.received).toHaveLength(0);
    conn.destroy();
  });

  it('times out with ERR_RPC_TIMEOUT and keeps other calls going', async () => {
    const { conn, server } = pair();
    const slow = conn.call(P.connectGetLibVersion, undefined, { timeoutMs: 30 });
    const other = conn.call(P.connectGetLibVersion, undefined);
    await server.next();
    const otherCall = await server.next();
    await expect(slow).rejects.toMatchObject({ code: 'ERR_RPC_TIMEOUT' });
    server.reply(otherCall.header, lib(5));
    expect(await other).toEqual({ libVer: 5 });
    conn.destroy();
  });

  it("closes the connection instead under the 'close' policy, failing the others", async () => {
    const { conn, server } = pair({ abandonPolicy: 'close' });
    const ac = new AbortController();
    const a = conn.call(P.connectGetLibVersion, undefined, { signal: ac.signal });
    const b = conn.call(P.connectGetLibVersion, undefined);
    await server.next();
    await server.next();
    ac.abort();
    await expect(a).rejects.toMatchObject({ code: 'ERR_RPC_ABORTED' });
    await expect(b).rejects.toMatchObject({ code: 'ERR_RPC_CLOSED' });
    expect(conn.isOpen).toBe(false);
  });
});

describe('disconnect', () => {
  it('fails every pending call at once when the peer goes away', async () => {
    const { conn, server } = pair();
    const calls = Array.from({ length: 20 }, () =>
      conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e),
    );
    for (let i = 0; i < 20; i++) await server.next();
    server.wire.destroy();
    const errs = await Promise.all(calls);
    expect(errs.every((e) => RpcError.isInstance(e) && e.code === 'ERR_RPC_CLOSED')).toBe(true);
    expect(conn.pendingCount).toBe(0);
    await expect(conn.call(P.connectGetLibVersion, undefined)).rejects.toMatchObject({
      code: 'ERR_RPC_CLOSED',
    });
  });

  it('closes with ERR_RPC_PROTOCOL on a packet length out of bounds', async () => {
    const { conn, server } = pair();
    const p = conn.call(P.connectGetLibVersion, undefined);
    await server.next();
    server.raw(Buffer.from([0x7f, 0, 0, 0]));
    await expect(p).rejects.toMatchObject({ code: 'ERR_RPC_PROTOCOL' });
    expect((await conn.closed).message).toMatch(/bad packet length/);
  });

  it('reassembles packets split across chunks and several packets in one chunk', async () => {
    const { conn, server } = pair();
    const a = conn.call(P.connectGetLibVersion, undefined);
    const b = conn.call(P.connectGetLibVersion, undefined);
    const ca = await server.next();
    const cb = await server.next();
    const bytes = Buffer.concat([
      encodePacket({ ...ca.header, type: MessageType.REPLY }, lib(1)),
      encodePacket({ ...cb.header, type: MessageType.REPLY }, lib(2)),
    ]);
    for (const cut of [1, 3, 30, 37]) {
      server.raw(bytes.subarray(0, cut));
      await new Promise((r) => setImmediate(r));
      server.raw(bytes.subarray(cut));
      break;
    }
    expect(await a).toEqual({ libVer: 1 });
    expect(await b).toEqual({ libVer: 2 });
    conn.destroy();
  });
});

describe('write batching and framing', () => {
  const reply = (h: { serial: number; proc: number }, payload: Uint8Array) =>
    encodePacket(
      {
        prog: REMOTE_PROGRAM,
        vers: 1,
        proc: h.proc,
        type: MessageType.REPLY,
        serial: h.serial,
        status: 0,
      },
      payload,
    );

  it('writes the calls made in one turn of the event loop in one write', async () => {
    const { conn, server } = pair();
    const calls = Array.from({ length: 40 }, () => conn.call(P.connectGetLibVersion, undefined));
    const got: Packet[] = [];
    for (let i = 0; i < 40; i++) got.push(await server.next());
    expect(server.writes).toHaveLength(1);
    expect(got.map((g) => g.header.serial)).toEqual(
      Array.from({ length: 40 }, (_, i) => got[0]!.header.serial + i),
    );
    for (const g of got) server.reply(g.header, lib(g.header.serial));
    expect((await Promise.all(calls)).map((r) => r.libVer)).toEqual(
      got.map((g) => g.header.serial),
    );
    // A call made once the batch went out goes in a write of its own.
    const later = conn.call(P.connectGetLibVersion, undefined);
    const l = await server.next();
    expect(server.writes).toHaveLength(2);
    server.reply(l.header, lib(1));
    expect(await later).toEqual({ libVer: 1 });
    conn.destroy();
  });

  it('keeps a batch intact when one of its calls fails to encode', async () => {
    const { conn, server } = pair();
    const a = conn.call(P.connectGetLibVersion, undefined);
    const bad = conn.call(P.domainGetState, {
      dom: { name: 'x', uuid: new Uint8Array(3), id: 1 },
      flags: 0,
    });
    const b = conn.call(P.domainLookupByName, { name: 'vm' });
    await expect(bad).rejects.toMatchObject({ code: 'ERR_XDR' });
    const ca = await server.next();
    const cb = await server.next();
    expect(server.writes).toHaveLength(1);
    expect(ca.header.proc).toBe(P.connectGetLibVersion.proc);
    expect(cb.header.proc).toBe(P.domainLookupByName.proc);
    expect(xdr.decode(P.domainLookupByName.args, cb.payload)).toEqual({ name: 'vm' });
    server.reply(ca.header, lib(1));
    server.replyError(cb.header, 42, 'Domain not found');
    expect(await a).toEqual({ libVer: 1 });
    await expect(b).rejects.toMatchObject({ code: 42 });
    conn.destroy();
  });

  it('leaves out a call cancelled before its batch was written, and sends the rest', async () => {
    const { conn, server } = pair({ abandonPolicy: 'close' });
    const ac = new AbortController();
    const a = conn.call(P.connectGetLibVersion, undefined);
    const cancelled = conn.call(P.connectGetHostname, undefined, { signal: ac.signal });
    const b = conn.call(P.connectGetLibVersion, undefined);
    ac.abort(new Error('changed my mind'));
    const err = await cancelled.catch((e: unknown) => e);
    expect(RpcError.isInstance(err) && err.code).toBe('ERR_RPC_ABORTED');
    const ca = await server.next();
    const cb = await server.next();
    expect(server.writes).toHaveLength(1);
    expect(server.writes[0]!.length).toBe(2 * 28);
    expect([ca.header.proc, cb.header.proc]).toEqual([
      P.connectGetLibVersion.proc,
      P.connectGetLibVersion.proc,
    ]);
    // Never sent, so no late reply to wait for, and even the 'close'
    // policy keeps the connection.
    expect(conn.abandonedCount).toBe(0);
    expect(conn.isOpen).toBe(true);
    server.reply(cb.header, lib(2));
    server.reply(ca.header, lib(1));
    expect(await a).toEqual({ libVer: 1 });
    expect(await b).toEqual({ libVer: 2 });
    expect(conn.pendingCount).toBe(0);
    conn.destroy();
  });

  it('writes nothing when every call of a batch was cancelled', async () => {
    const { conn, server } = pair();
    const ac = new AbortController();
    const calls = [0, 1, 2].map(() =>
      conn.call(P.connectGetLibVersion, undefined, { signal: ac.signal }).catch((e: unknown) => e),
    );
    ac.abort();
    for (const e of await Promise.all(calls)) expect(e).toMatchObject({ code: 'ERR_RPC_ABORTED' });
    // The next call is the first thing on the wire.
    const next = conn.call(P.connectGetLibVersion, undefined);
    const n = await server.next();
    expect(server.writes).toHaveLength(1);
    expect(server.received).toHaveLength(1);
    server.reply(n.header, lib(9));
    expect(await next).toEqual({ libVer: 9 });
    conn.destroy();
  });

  it('parses every packet of one read, keepalive and foreign programs among them', async () => {
    const { conn, server } = pair();
    const calls = Array.from({ length: 50 }, () => conn.call(P.connectGetLibVersion, undefined));
    const got: Header[] = [];
    for (let i = 0; i < 50; i++) got.push((await server.next()).header);
    const ping = encodePacket({
      prog: KEEPALIVE_PROGRAM,
      vers: 1,
      proc: 1,
      type: MessageType.MESSAGE,
      serial: 0,
      status: 0,
    });
    const event = encodePacket(
      { prog: 0x12345678, vers: 1, proc: 1, type: MessageType.MESSAGE, serial: 0, status: 0 },
      Buffer.alloc(8),
    );
    // Replies in reverse order, a ping and another program's packet in the middle, one read.
    const parts = got.reverse().map((h) => reply(h, lib(h.serial)));
    parts.splice(25, 0, ping, event);
    server.raw(Buffer.concat(parts));
    const results = await Promise.all(calls);
    expect(results.map((r) => r.libVer)).toEqual(got.reverse().map((h) => h.serial));
    const pong = await server.next();
    expect(pong.header).toMatchObject({ prog: KEEPALIVE_PROGRAM, proc: 2 });
    expect(conn.pendingCount).toBe(0);
    conn.destroy();
  });

  it('reassembles packets split at every byte, the length word included', async () => {
    const { conn, server } = pair();
    const a = conn.call(P.connectGetLibVersion, undefined);
    const b = conn.call(P.connectGetHostname, undefined);
    const c = conn.call(P.connectGetLibVersion, undefined);
    const [ha, hb, hc] = [await server.next(), await server.next(), await server.next()].map(
      (p) => p.header,
    ) as [Header, Header, Header];
    const bytes = Buffer.concat([
      reply(ha, lib(1)),
      reply(hb, xdr.encode(P.connectGetHostname.ret, { hostname: 'kvm1.example.com' })),
      reply(hc, lib(3)),
    ]);
    for (let at = 0; at < bytes.length; at++) server.raw(bytes.subarray(at, at + 1));
    expect(await a).toEqual({ libVer: 1 });
    expect(await b).toEqual({ hostname: 'kvm1.example.com' });
    expect(await c).toEqual({ libVer: 3 });
    conn.destroy();
  });

  it('reassembles a large packet that arrives over many reads, with the next packet in its last read', async () => {
    const { conn, server } = pair();
    const big = conn.call(P.connectGetHostname, undefined);
    const small = conn.call(P.connectGetLibVersion, undefined);
    const hb = (await server.next()).header;
    const hs = (await server.next()).header;
    const hostname = 'h'.repeat(3 * 1024 * 1024 + 3);
    const bytes = Buffer.concat([
      reply(hb, xdr.encode(P.connectGetHostname.ret, { hostname })),
      reply(hs, lib(5)),
    ]);
    const step = 64 * 1024 + 7;
    for (let at = 0; at < bytes.length; at += step) server.raw(bytes.subarray(at, at + step));
    expect((await big).hostname).toBe(hostname);
    expect(await small).toEqual({ libVer: 5 });
    conn.destroy();
  });

  it('fails calls still waiting in the batch on disconnect, and writes nothing', async () => {
    const { conn, server } = pair();
    const written = conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e);
    await server.next();
    const queued = Array.from({ length: 10 }, () =>
      conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e),
    );
    conn.destroy();
    const errs = await Promise.all([written, ...queued]);
    expect(errs.every((e) => RpcError.isInstance(e) && e.code === 'ERR_RPC_CLOSED')).toBe(true);
    expect(conn.pendingCount).toBe(0);
    expect(server.received).toHaveLength(1);
  });

  it('fails written and batched calls at once when the peer closes', async () => {
    const { conn, server } = pair();
    const written = Array.from({ length: 5 }, () =>
      conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e),
    );
    for (let i = 0; i < 5; i++) await server.next();
    server.wire.end();
    const queued = Array.from({ length: 5 }, () =>
      conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e),
    );
    // Settled in the same turn: none waits for the next turn of the event loop.
    let turnEnded = false;
    const settledInTurn: boolean[] = [];
    const all = [...written, ...queued].map((p) =>
      p.then((e) => {
        if (settledInTurn.length === 0) setImmediate(() => (turnEnded = true));
        settledInTurn.push(!turnEnded);
        return e;
      }),
    );
    const errs = await Promise.all(all);
    expect(errs.every((e) => RpcError.isInstance(e) && e.code === 'ERR_RPC_CLOSED')).toBe(true);
    expect(settledInTurn).toEqual(Array(10).fill(true));
    expect(conn.pendingCount).toBe(0);
    expect(conn.isOpen).toBe(false);
  });
});

describe('keepalive', () => {
  const ping = (proc: number) =>
    encodePacket({
      prog: KEEPALIVE_PROGRAM,
      vers: 1,
      proc,
      type: MessageType.MESSAGE,
      serial: 0,
      status: 0,
    });

  it('answers a ping from the peer with a pong', async () => {
    const { conn, server } = pair();
    server.raw(ping(1));
    const pong = await server.next();
    expect(pong.header).toMatchObject({ prog: KEEPALIVE_PROGRAM, proc: 2, type: 2, serial: 0 });
    conn.destroy();
  });

  // Keepalive runs on the clock: a fake one (timers and Date) makes these
  // exact and independent of how loaded the machine is.
  const fakeClock = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  const turn = () => new Promise((r) => setImmediate(r));

  it('pings after a quiet interval and stays open while pongs come back', async () => {
    fakeClock();
    try {
      const { conn, server } = pair();
      conn.startKeepalive({ intervalMs: 40, count: 3 });
      for (let i = 0; i < 5; i++) {
        vi.advanceTimersByTime(40);
        const p = await server.next();
        expect(p.header).toMatchObject({ prog: KEEPALIVE_PROGRAM, proc: 1 });
        server.raw(ping(2));
        await turn();
      }
      // 200 ms have passed, longer than the 120 ms without an answer that
      // would be fatal: every pong counted.
      expect(conn.isOpen).toBe(true);
      conn.destroy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('declares a silent peer dead after count intervals and fails pending calls with ERR_RPC_KEEPALIVE', async () => {
    fakeClock();
    try {
      const { conn, server } = pair();
      conn.startKeepalive({ intervalMs: 30, count: 3 });
      const call = conn.call(P.connectGetLibVersion, undefined).catch((e: unknown) => e);
      await server.next();
      vi.advanceTimersByTime(80);
      await turn();
      expect(conn.isOpen).toBe(true);
      expect((await server.next()).header).toMatchObject({ prog: KEEPALIVE_PROGRAM, proc: 1 });
      vi.advanceTimersByTime(10);
      expect(await call).toMatchObject({ code: 'ERR_RPC_KEEPALIVE' });
      expect(conn.isOpen).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('streams', () => {
  const vol = { pool: 'p', name: 'v', key: 'k' };

  it('uploads in packets of at most 256 KiB and finishes with the handshake', async () => {
    const { conn, server } = pair();
    const data = Buffer.alloc(600 * 1024, 7);
    const c = new LibvirtClient(conn);
    const done = c.storageVolUpload(
      vol,
      Readable.from([data.subarray(0, 1000), data.subarray(1000)]),
    );
    const call = await server.next();
    expect(call.header.proc).toBe(208);
    server.reply(call.header);
    let total = 0;
    for (;;) {
      const p = await server.next();
      expect(p.header).toMatchObject({ type: MessageType.STREAM, serial: call.header.serial });
      if (p.header.status === MessageStatus.OK) break;
      expect(p.header.status).toBe(MessageStatus.CONTINUE);
      expect(p.payload.length).toBeLessThanOrEqual(256 * 1024);
      total += p.payload.length;
    }
    expect(total).toBe(data.length);
    server.stream(call.header, MessageStatus.OK);
    await done;
    expect(conn.pendingCount).toBe(0);
    conn.destroy();
  });

  it('fails an upload with the server error that arrives mid-stream', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    let produced = 0;
    async function* endless() {
      for (;;) {
        produced++;
        yield Buffer.alloc(64 * 1024);
        await new Promise((r) => setImmediate(r));
      }
    }
    const done = c.storageVolUpload(vol, endless());
    const call = await server.next();
    server.reply(call.header);
    await server.next();
    server.reply(
      call.header,
      xdr.encode(remoteErrorCodec, errorBody(38, 'No space left on device')),
      MessageStatus.ERROR,
    );
    const err = await done.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err).toMatchObject({ code: 38, message: 'No space left on device' });
    const after = produced;
    await new Promise((r) => setTimeout(r, 20));
    expect(produced).toBe(after); // the source is no longer read
    expect(conn.isOpen).toBe(true);
    expect(conn.pendingCount).toBe(0);
    conn.destroy();
  });

  it('downloads until the end of data, then finishes', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const pending = c.storageVolDownload(vol);
    const call = await server.next();
    expect(call.header.proc).toBe(209);
    server.reply(call.header);
    const body = await pending;
    server.stream(call.header, MessageStatus.CONTINUE, Buffer.from('hello '));
    server.stream(call.header, MessageStatus.CONTINUE, Buffer.from('world'));
    server.stream(call.header, MessageStatus.CONTINUE); // empty data: end of data, as libvirtd sends it
    const finish = await server.next();
    expect(finish.header).toMatchObject({ type: MessageType.STREAM, status: MessageStatus.OK });
    server.stream(call.header, MessageStatus.OK);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('hello world');
    conn.destroy();
  });

  it('rejects a download the server refuses, without an unhandled stream error', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const pending = c.storageVolDownload(vol);
    const call = await server.next();
    server.replyError(call.header, 50, 'Storage volume not found');
    await expect(pending).rejects.toMatchObject({ name: 'LibvirtError', code: 50 });
    expect(conn.pendingCount).toBe(0);
    await new Promise((r) => setTimeout(r, 10));
    conn.destroy();
  });

  it('destroys the download with a stream error sent mid-stream', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const pending = c.storageVolDownload(vol);
    const call = await server.next();
    server.reply(call.header);
    const body = await pending;
    server.stream(call.header, MessageStatus.CONTINUE, Buffer.from('part'));
    server.stream(
      call.header,
      MessageStatus.ERROR,
      xdr.encode(remoteErrorCodec, errorBody(38, 'read failed')),
    );
    const err = await (async () => {
      for await (const _ of body) {
        // drain
      }
    })().catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'LibvirtError', message: 'read failed' });
    conn.destroy();
  });

  it('aborts a download on the server when the reader destroys it', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const pending = c.storageVolDownload(vol);
    const call = await server.next();
    server.reply(call.header);
    const body = await pending;
    body.destroy();
    const abort = await server.next();
    expect(abort.header).toMatchObject({
      type: MessageType.STREAM,
      status: MessageStatus.ERROR,
      serial: call.header.serial,
    });
    // Late data for the aborted stream is dropped; the connection still works.
    server.stream(call.header, MessageStatus.CONTINUE, Buffer.from('late'));
    server.stream(call.header, MessageStatus.OK);
    const q = conn.call(P.connectGetLibVersion, undefined);
    server.reply((await server.next()).header, lib(3));
    expect(await q).toEqual({ libVer: 3 });
    conn.destroy();
  });
  it('pauses the transport while a download reader lags, and resumes when it reads', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const pending = c.storageVolDownload(vol, { highWaterMark: 1024 * 1024 });
    const call = await server.next();
    server.reply(call.header);
    const body = await pending;
    const chunk = Buffer.alloc(256 * 1024, 9);
    for (let i = 0; i < 16; i++) server.stream(call.header, MessageStatus.CONTINUE, chunk);
    server.stream(call.header, MessageStatus.CONTINUE);
    await new Promise((r) => setTimeout(r, 50));
    // Nothing read yet: the client stopped taking bytes from the transport.
    expect(body.readableLength).toBeLessThanOrEqual(1024 * 1024 + 256 * 1024);
    expect(server.wire.writableLength).toBeGreaterThan(0);
    const reading = (async () => {
      let n = 0;
      for await (const b of body) n += (b as Buffer).length;
      return n;
    })();
    const finish = await server.next();
    expect(finish.header).toMatchObject({ type: MessageType.STREAM, status: MessageStatus.OK });
    server.stream(call.header, MessageStatus.OK);
    expect(await reading).toBe(16 * 256 * 1024);
    conn.destroy();
  });

  it('aborts an upload on the server when its timeout runs out, keeping the connection', async () => {
    const { conn, server } = pair();
    const c = new LibvirtClient(conn);
    const counter = { n: 0 };
    async function* slow() {
      for (;;) {
        counter.n++;
        yield Buffer.alloc(1024);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const done = c.storageVolUpload(vol, slow(), { timeoutMs: 60 });
    const call = await server.next();
    server.reply(call.header);
    await expect(done).rejects.toMatchObject({ code: 'ERR_RPC_TIMEOUT' });
    let last = await server.next();
    while (last.header.status === MessageStatus.CONTINUE) last = await server.next();
    expect(last.header).toMatchObject({ type: MessageType.STREAM, status: MessageStatus.ERROR });
    server.stream(call.header, MessageStatus.OK); // the server confirms the abort
    const q = conn.call(P.connectGetLibVersion, undefined);
    server.reply((await server.next()).header, lib(4));
    expect(await q).toEqual({ libVer: 4 });
    expect(conn.abandonedCount).toBe(0);
    conn.destroy();
  });
});

describe('connect', () => {
  it('opens the URI, then asks for keepalive support', async () => {
    const [a, b] = duplexPair();
    const server = new FakeServer(b);
    const pending = connect({ dialer: duplexDialer(() => a), uri: 'test:///default' });
    const open = await server.next();
    expect(open.header.proc).toBe(1);
    expect(xdr.decode(P.connectOpen.args, open.payload)).toEqual({
      name: 'test:///default',
      flags: 0,
    });
    server.reply(open.header);
    const feature = await server.next();
    expect(xdr.decode(P.connectSupportsFeature.args, feature.payload)).toEqual({ feature: 10 });
    server.reply(feature.header, xdr.encode(P.connectSupportsFeature.ret, { supported: 1 }));
    const client = await pending;
    expect(client.rpc.isOpen).toBe(true);
    client.rpc.destroy();
  });

  it('gives up with ERR_RPC_TIMEOUT when the daemon does not answer the open in time', async () => {
    const [a] = duplexPair();
    await expect(
      connect({ dialer: duplexDialer(() => a), uri: 'test:///default', timeoutMs: 50 }),
    ).rejects.toMatchObject({ code: 'ERR_RPC_TIMEOUT' });
    expect(a.destroyed).toBe(true);
  });
});
