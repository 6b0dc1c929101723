// Peer: the proxy program (bin/proxy-server.js) spawned as a child process, with short limits;
// raw-socket clients that drip their heads, stall their bodies, send too many fields or
// pipeline without reading; a raw TCP origin that reads with llhttp. One case at the end drives
// a client connection on a socket fake, to count exactly what is held for a client that reads
// nothing. Every limit here is set to a small value; the defaults are in the README's table
// (held to DEFAULT_LIMITS by defaults.test.ts).
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientConn } from '../src/connection.js';
import type { ProxyContext } from '../src/context.js';
import { Destinations } from '../src/destination.js';
import { DEFAULT_LIMITS } from '../src/limits.js';
import { startForwardProxy } from '../src/proxy.js';
import type { UpstreamWaiter } from '../src/upstream.js';
import {
  exchange,
  type RecordingOrigin,
  startProxyAndOrigin,
  stopProxyAndOrigin,
} from './origins.js';
import { eventually, fdCount, LOOPBACK_ORIGINS, type RunningProxy, rssKb } from './support.js';

const ADDRESS = '127.0.4.50';
const LIMITS = {
  headersTimeoutMs: 800,
  bodyIdleTimeoutMs: 800,
  maxHeaderFields: 20,
  maxPipelinedRequests: 4,
};

let origin: RecordingOrigin;
let proxy: RunningProxy;
let O: string;

beforeAll(async () => {
  ({ origin, proxy, base: O } = await startProxyAndOrigin(ADDRESS, LIMITS));
}, 30_000);

afterAll(() => stopProxyAndOrigin({ origin, proxy }));

/** Opens a client connection; resolves with it and a way to read all it got once it closes. */
function client(): Promise<{ s: Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: proxy.address, port: proxy.port, allowHalfOpen: true });
    let text = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      text += d;
    });
    s.on('error', () => {});
    s.on('end', () => s.end()); // the proxy closed its side: so does the client
    const closed = new Promise<string>((r) => s.once('close', () => r(text)));
    s.once('connect', () => resolve({ s, closed }));
    s.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('slow clients', () => {
  it('slowloris: a head dripped a byte at a time gets 408 once headersTimeoutMs has passed', async () => {
    const { s, closed } = await client();
    const head = `GET ${O}/slow HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(200)}\r\n\r\n`;
    const t0 = performance.now();
    let i = 0;
    const drip = setInterval(() => {
      if (i < head.length && !s.destroyed) s.write(head[i++] as string);
    }, 20);
    const answer = await closed;
    clearInterval(drip);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(performance.now() - t0).toBeLessThan(LIMITS.headersTimeoutMs + 3_000);
    expect(i).toBeLessThan(head.length); // cut while still dripping
  });

  it('empty lines dripped before a request line do not reset the head timer', async () => {
    const { s, closed } = await client();
    const drip = setInterval(() => {
      if (!s.destroyed) s.write('\r\n');
    }, 50);
    const answer = await closed;
    clearInterval(drip);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a request body that stops coming gets 408 after bodyIdleTimeoutMs; the origin sees no whole request', async () => {
    origin.reset();
    const { s, closed } = await client();
    s.write(`POST ${O}/stall HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc`);
    const t0 = performance.now();
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(performance.now() - t0).toBeGreaterThan(LIMITS.bodyIdleTimeoutMs - 100);
    expect(origin.requests).toEqual([]);
  });

  it('a body that keeps coming, slowly, is not cut', async () => {
    origin.reset();
    const { s, closed } = await client();
    s.write(`POST ${O}/trickle HTTP/1.1\r\nContent-Length: 8\r\nConnection: close\r\n\r\n`);
    for (const c of 'trickles') {
      await sleep(300); // 2.4 s in all, three times the idle limit, never idle for it
      s.write(c);
    }
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(origin.requests.map((r) => r.body.toString())).toEqual(['trickles']);
  });

  it('a body the origin is slow to take is no idle body: the wait for the origin does not count', async () => {
    const { createServer } = await import('node:net');
    // An origin that reads nothing for 2 s, then everything. The client half-closes after its
    // body, whose last bytes may then wait in the proxy while the end has already come.
    const slow = createServer((sock) => {
      sock.pause();
      let got = 0;
      setTimeout(() => {
        sock.on('data', (d: Buffer) => {
          got += d.length;
          const end = got >= 8 * 1024 * 1024;
          if (end) sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
        });
        sock.resume();
      }, 2_000);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const port = (slow.address() as { port: number }).port;
    try {
      const body = Buffer.alloc(8 * 1024 * 1024, 1);
      const started = Date.now();
      const got = await exchange(
        proxy,
        Buffer.concat([
          Buffer.from(
            `POST http://127.0.0.1:${port}/ HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n`,
          ),
          body,
        ]),
        { timeoutMs: 20_000 },
      );
      expect(
        got.text,
        `after ${Date.now() - started} ms: timed out ${got.timedOut}, reset ${got.reset}`,
      ).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      slow.close();
    }
  }, 30_000);
});

describe('slow readers', () => {
  it('a slow reader of an answer that ends its connection still gets all of it', async () => {
    const body = 'b'.repeat(4 * 1024 * 1024);
    origin.answer = () => ({
      bytes: `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    });
    const { s, closed } = await client();
    s.pause();
    s.write(`GET ${O}/slow-reader HTTP/1.1\r\nConnection: close\r\n\r\n`);
    await sleep(1_000); // the answer piles up in the proxy, then is sent as the client reads
    s.resume();
    const text = await closed;
    origin.reset();
    expect(text.length - text.indexOf('\r\n\r\n') - 4).toBe(body.length);
  });
});

describe('a pause of the proxy process', () => {
  // A loaded machine can stop the process longer than a head timeout. What a client sent
  // meanwhile waits in the kernel: it is read before the clocks are, so it is no slow client.
  it('a head that arrived while the process stood still is answered, not timed out', async () => {
    const inProcess = await startForwardProxy({
      name: 'paused',
      address: ADDRESS,
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      limits: { headersTimeoutMs: 200 },
    });
    try {
      const s = connect({ host: ADDRESS, port: inProcess.address.port });
      let text = '';
      s.setEncoding('latin1');
      s.on('data', (d: string) => {
        text += d;
      });
      await new Promise((r) => s.once('connect', r));
      await sleep(50); // the proxy has taken the connection
      // The head is sent, then the process stands still for five timeouts, from the check
      // phase: the next turn of the event loop starts with the timers, before the poll phase
      // reads the head.
      await new Promise<void>((r) =>
        setImmediate(() => {
          s.write('GET /healthz HTTP/1.1\r\n\r\n');
          const until = performance.now() + 1_000;
          while (performance.now() < until) {}
          r();
        }),
      );
      await eventually(() => text.includes('\r\n\r\n'), 5_000);
      s.destroy();
      expect(text).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await inProcess.close();
    }
  });
});

describe('oversized heads', () => {
  it(`more than maxHeaderFields (${LIMITS.maxHeaderFields}) field lines get 431; as many pass`, async () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `X-${i}: v\r\n`).join('');
    const ok = await exchange(
      proxy,
      `GET ${O}/f HTTP/1.1\r\n${fields(LIMITS.maxHeaderFields)}\r\n`,
    );
    expect(ok.text).toMatch(/^HTTP\/1\.1 200 /);
    const many = await exchange(
      proxy,
      `GET ${O}/f HTTP/1.1\r\n${fields(LIMITS.maxHeaderFields + 1)}\r\n`,
    );
    expect(many.text).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('a head larger than maxHeaderBytes gets 431 before it is complete', async () => {
    const { s, closed } = await client();
    s.write(`GET ${O}/big HTTP/1.1\r\nX: ${'a'.repeat(DEFAULT_LIMITS.maxHeaderBytes + 10)}`);
    expect(await closed).toMatch(/^HTTP\/1\.1 431 /);
  });
});

describe('a client that pipelines and never reads', () => {
  it('holds the proxy to bounded memory, and gets every answer in order once it reads', async () => {
    origin.reset();
    // 40 MiB of answers, far more than the socket buffers on the way hold, in few enough
    // exchanges (each a round trip to the origin) for a loaded machine.
    const SIZE = 20_480;
    origin.answer = (req) => ({
      bytes: `HTTP/1.1 200 OK\r\nContent-Length: ${SIZE}\r\n\r\n${req.target.padEnd(SIZE, '.')}`,
    });
    const N = 2_000;
    const rssBefore = rssKb(proxy.pid);
    const fdsBefore = fdCount(proxy.pid);
    const s = connect({ host: proxy.address, port: proxy.port, allowHalfOpen: true });
    s.pause(); // reads nothing
    let failed: Error | undefined;
    s.on('error', (err) => {
      failed = err;
    });
    const requests = Array.from({ length: N }, (_, i) => `GET ${O}/${i} HTTP/1.1\r\n\r\n`).join('');
    s.end(requests); // and says it has no more to send
    const proxyEnded = new Promise<void>((r) => s.once('end', () => r()));
    // The origin is asked until the buffers between proxy and client are full, then no more.
    let last = -1;
    await eventually(() => {
      const seen = origin.requests.length;
      const still = seen === last;
      last = seen;
      return still && seen > 0;
    }, 20_000);
    await sleep(500);
    const stalledAt = origin.requests.length;
    const rssStalled = rssKb(proxy.pid);
    expect(stalledAt).toBeLessThan(N);
    expect(rssStalled - rssBefore).toBeLessThan(16 * 1024);
    // Now it reads: every answer, in order.
    let text = '';
    let answers = 0;
    let firstWrong = -1;
    await new Promise<void>((resolve) => {
      s.setEncoding('latin1');
      s.on('data', (d: string) => {
        text += d;
        for (;;) {
          const at = text.indexOf('\r\n\r\n');
          if (at < 0 || text.length < at + 4 + SIZE) break;
          const body = text.slice(at + 4, at + 4 + SIZE);
          if (firstWrong < 0 && !body.startsWith(`/${answers}.`)) firstWrong = answers;
          answers++;
          text = text.slice(at + 4 + SIZE);
        }
        if (answers === N) resolve();
      });
      s.once('close', () => resolve()); // cut short: the counts below say so
      s.resume();
    });
    expect(failed?.message, `after ${answers} answers`).toBeUndefined();
    await proxyEnded; // and once all are answered, the proxy closes the connection too
    s.destroy();
    expect(answers).toBe(N);
    expect(firstWrong).toBe(-1);
    await eventually(() => fdCount(proxy.pid) <= fdsBefore + 1, 10_000);
    origin.reset();
  }, 60_000);

  it(`holds at most maxPipelinedRequests answers the client has not taken (on a socket fake)`, () => {
    const socket = new FakeSocket();
    new ClientConn(fakeContext(3), socket as unknown as Socket, true);
    // Ten health checks at once, and a client that takes nothing of what is written.
    socket.emit('data', Buffer.from('GET /healthz HTTP/1.1\r\n\r\n'.repeat(10)));
    expect(socket.answers()).toBe(3);
    expect(socket.paused).toBe(true);
    socket.flush(); // it has read them
    expect(socket.answers()).toBe(6);
    socket.flush();
    socket.flush();
    expect(socket.answers()).toBe(10);
  });

  it('answers every request held for such a client even when it half-closes meanwhile (on a socket fake)', () => {
    const socket = new FakeSocket();
    new ClientConn(fakeContext(3), socket as unknown as Socket, true);
    socket.emit('data', Buffer.from('GET /healthz HTTP/1.1\r\n\r\n'.repeat(10)));
    socket.emit('end'); // all sent, nothing read yet
    expect(socket.destroyed).toBe(false);
    for (let i = 0; i < 4; i++) socket.flush();
    expect(socket.answers()).toBe(10);
    expect(socket.ended).toBe(true);
  });
  it('passes on a body the client half-closed after, though the origin could not take it yet (on a socket fake)', () => {
    // The head, the whole body and the end in one read, before there is a connection to the
    // origin: the body waits in the proxy, and Node emits 'end' all the same.
    const held = heldRequest(5, 'hello');
    expect(held.socket.destroyed, 'the request was dropped as cut short').toBe(false);
    const sent = held.connect();
    expect(sent()).toMatch(/^POST \/ HTTP\/1\.1\r\n[\s\S]*\r\n\r\nhello$/);
    expect(held.socket.destroyed).toBe(false);
  });

  it('still cuts a request whose client ends before the body is all there (on a socket fake)', () => {
    const held = heldRequest(9, 'hello');
    expect(held.socket.destroyed).toBe(false);
    held.connect();
    expect(held.socket.destroyed, 'four bytes of the body never came').toBe(true);
  });
});

/**
 * A POST of `length` body bytes of which `body` came, then the client's end, all in one read
 * on a socket fake, while the proxy has no connection to the origin yet; `connect` gives it
 * one, which takes every write, and returns what reached it so far.
 */
function heldRequest(
  length: number,
  body: string,
): { socket: FakeSocket; connect(): () => string } {
  const socket = new FakeSocket();
  let waiter: UpstreamWaiter | undefined;
  const pool = {
    acquire: (_h: string, _p: number, w: UpstreamWaiter) => (waiter = w),
    cancel: () => {},
  };
  new ClientConn(
    { ...fakeContext(3), pool: pool as unknown as ProxyContext['pool'] },
    socket as unknown as Socket,
    true,
  );
  socket.emit(
    'data',
    Buffer.from(
      `POST http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: ${length}\r\n\r\n${body}`,
    ),
  );
  socket.emit('end');
  return {
    socket,
    connect() {
      let sent = '';
      const upstream = {
        owner: undefined,
        lend: () => {},
        socket: {
          write: (d: Buffer | string) => {
            sent += typeof d === 'string' ? d : d.toString('latin1');
            return true;
          },
          resume: () => {},
          destroy: () => {},
        },
      };
      waiter?.onUpstream(upstream as unknown as Parameters<UpstreamWaiter['onUpstream']>[0]);
      return () => sent;
    },
  };
}

/** What a client connection needs of its proxy, for the health check alone. */
function fakeContext(maxPipelinedRequests: number): ProxyContext {
  return {
    name: 'fake',
    socks5: true,
    limits: { ...DEFAULT_LIMITS, maxPipelinedRequests },
    allowed: { allows: () => true } as unknown as ProxyContext['allowed'],
    healthOnly: { allows: () => false } as unknown as ProxyContext['healthOnly'],
    destinations: new Destinations(LOOPBACK_ORIGINS),
    auth: undefined,
    log: undefined,
    outgoing: () => undefined,
    pool: {} as ProxyContext['pool'],
    parents: undefined,
    conns: new Set(),
    tunnels: new Set(),
    admin: undefined,
    closing: false,
  };
}

/** Just enough of a socket for a client connection: writes pile up until `flush`. */
class FakeSocket extends EventEmitter {
  readonly remoteAddress = '127.0.0.1';
  written = '';
  writableLength = 0;
  writableNeedDrain = false;
  paused = false;
  destroyed = false;
  #callbacks: (() => void)[] = [];

  setTimeout(): this {
    return this;
  }
  write(data: Buffer | string, enc?: unknown, cb?: () => void): boolean {
    const done = typeof enc === 'function' ? (enc as () => void) : cb;
    this.written += typeof data === 'string' ? data : data.toString('latin1');
    this.writableLength += typeof data === 'string' ? data.length : data.length;
    if (done !== undefined) this.#callbacks.push(done);
    this.writableNeedDrain = this.writableLength >= 16 * 1024;
    return !this.writableNeedDrain;
  }
  /** The client has read everything written so far. */
  flush(): void {
    this.writableLength = 0;
    const drain = this.writableNeedDrain;
    this.writableNeedDrain = false;
    for (const cb of this.#callbacks.splice(0)) cb();
    if (drain) this.emit('drain');
  }
  answers(): number {
    return this.written.split('HTTP/1.1 200 OK').length - 1;
  }
  cork(): void {}
  uncork(): void {}
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  ended = false;
  destroySoon(): void {
    this.ended = true;
  }
  end(): this {
    this.ended = true;
    return this;
  }
}
