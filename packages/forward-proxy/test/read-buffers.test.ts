// Peer: a real TCP socket pair on 127.0.0.1. The read buffers the proxy lends to a socket that has
// not yet written what they hold: lending never disturbs that socket, ended or not.
import { connect, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MAX_READ_BYTES, MIN_READ_BYTES, ReadBuffer } from '../src/read-buffers.js';
import { listen } from './support.js';

/** A connected pair: `server` writes, `client` reads (paused until asked). */
async function pair(): Promise<{ server: Socket; client: Socket; close(): void }> {
  const srv = createServer();
  const port = await listen(srv);
  const accepted = new Promise<Socket>((r) => srv.once('connection', r));
  const client = connect({ host: '127.0.0.1', port });
  client.pause();
  const server = await accepted;
  return { server, client, close: () => srv.close() };
}

describe('lending a read buffer', () => {
  it('to a socket that has ended its side: everything queued still arrives', async () => {
    const { server, client, close } = await pair();
    try {
      const reads = new ReadBuffer();
      const data = reads.next();
      data.fill(7);
      const total = 8 * 1024 * 1024;
      // More than the socket buffers hold, so some stays queued in the writer.
      for (let sent = 0; sent < total; sent += data.length) server.write(Buffer.from(data));
      server.write(data);
      server.end(); // the connection's last answer: its side ends
      reads.lend(server);
      expect(server.destroyed).toBe(false);
      expect(reads.next()).not.toBe(data); // the lent buffer is not read into again
      let n = 0;
      client.on('data', (d: Buffer) => {
        n += d.length;
      });
      client.resume();
      await new Promise((r) => client.once('end', r));
      expect(n).toBe(total + data.length);
    } finally {
      client.destroy();
      server.destroy();
      close();
    }
  });

  it('to a socket that has written everything already: the same buffer is read into again', async () => {
    const { server, client, close } = await pair();
    try {
      const reads = new ReadBuffer();
      const data = reads.next();
      reads.lend(server); // nothing queued
      expect(reads.next()).toBe(data);
    } finally {
      client.destroy();
      server.destroy();
      close();
    }
  });

  it('grows while reads fill it, and shrinks when they use little of it', () => {
    const reads = new ReadBuffer();
    expect(reads.next().length).toBe(MIN_READ_BYTES); // a quiet connection holds little
    reads.got(MIN_READ_BYTES);
    expect(reads.next().length).toBe(MAX_READ_BYTES); // a bulk transfer reads more at once
    reads.got(MAX_READ_BYTES / 2);
    expect(reads.next().length).toBe(MAX_READ_BYTES);
    reads.got(100);
    expect(reads.next().length).toBe(MIN_READ_BYTES);
    reads.release();
  });
});
