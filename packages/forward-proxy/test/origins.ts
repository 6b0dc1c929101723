// Test support (not a test file): an origin on a raw TCP socket that reads what the proxy sends
// it with llhttp, as a Node.js server would: every request it could read, on which connection,
// and every time llhttp refused the bytes the proxy forwarded (which must never happen). It
// answers each request with a canned answer, by default `200` with the method and path.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { listen } from '@proxy-op/testkit';
import { type LlMessage, llhttpParse } from './llhttp.js';
import {
  freePort,
  killAllSpawned,
  type RunningProxy,
  startProgram,
  stopProgram,
} from './support.js';

/** A request the origin read, with the connection it came on (counted from 1). */
export type Received = LlMessage & { readonly conn: number };

/** What the origin writes back for a request; `close` ends the connection after it. */
export interface Answer {
  readonly bytes: string | Buffer;
  readonly close?: boolean;
}

/** A recording origin on 127.0.0.1. */
export interface RecordingOrigin {
  readonly server: Server;
  readonly port: number;
  /** Every request read, in order of arrival. */
  readonly requests: Received[];
  /** Where llhttp refused what reached the origin, or found it unfinished at a close. */
  readonly refusals: string[];
  /** The answer to each request (replaceable). */
  answer: (req: Received) => Answer;
  /** Connections accepted so far, and open now. */
  accepted: number;
  open: number;
  /** Forgets what was recorded. */
  reset(): void;
  close(): Promise<void>;
}

/** The default answer: 200, the body naming the method and path. */
export function echoAnswer(req: Received): Answer {
  const body = `${req.method} ${req.target} ${req.body.length}`;
  return {
    bytes: `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${req.method === 'HEAD' ? '' : body}`,
  };
}

/** Starts a recording origin. */
export async function startRecordingOrigin(): Promise<RecordingOrigin> {
  const sockets = new Set<Socket>();
  const o: RecordingOrigin = {
    server: createServer({ allowHalfOpen: true }),
    port: 0,
    requests: [],
    refusals: [],
    answer: echoAnswer,
    accepted: 0,
    open: 0,
    reset() {
      o.requests.length = 0;
      o.refusals.length = 0;
      o.answer = echoAnswer;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => o.server.close(() => r()));
    },
  };
  o.server.on('connection', (s: Socket) => {
    const conn = ++o.accepted;
    o.open++;
    sockets.add(s);
    let buf = Buffer.alloc(0);
    let closing = false;
    s.on('error', () => {});
    s.on('close', () => {
      o.open--;
      sockets.delete(s);
    });
    s.on('data', (d: Buffer) => {
      if (closing) return;
      buf = Buffer.concat([buf, d]);
      const r = llhttpParse('request', buf);
      for (const m of r.messages) {
        const req = { ...m, conn };
        o.requests.push(req);
        const a = o.answer(req);
        s.write(a.bytes);
        if (a.close) {
          closing = true;
          s.end();
          return;
        }
      }
      const used = r.messages.at(-1)?.end ?? 0;
      buf = buf.subarray(used);
      if (r.error !== undefined) {
        o.refusals.push(
          `conn ${conn}: ${r.error.code} ${r.error.reason} in ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`,
        );
        closing = true;
        s.destroy();
      } else if (r.upgradeAt !== undefined) {
        o.refusals.push(`conn ${conn}: a request switched protocols`);
        closing = true;
        s.destroy();
      }
    });
    s.on('end', () => {
      s.end();
    });
  });
  (o as { port: number }).port = await listen(o.server);
  return o;
}

/**
 * Sends raw bytes to the proxy, half-closes, and collects what comes back
 * until the proxy closes (or `timeoutMs` passes: then `timedOut`).
 */
export function exchange(
  proxy: { address: string; port: number },
  data: string | Buffer,
  opts: { timeoutMs?: number; halfClose?: boolean } = {},
): Promise<{ text: string; timedOut: boolean; reset: boolean }> {
  return new Promise((resolve) => {
    const s = connect({ host: proxy.address, port: proxy.port, allowHalfOpen: true });
    const parts: Buffer[] = [];
    let reset = false;
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text: Buffer.concat(parts).toString('latin1'), timedOut: true, reset });
    }, opts.timeoutMs ?? 10_000);
    s.on('data', (d: Buffer) => parts.push(d));
    s.on('error', () => {
      reset = true;
    });
    s.on('end', () => s.end());
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(parts).toString('latin1'), timedOut: false, reset });
    });
    s.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
    if (opts.halfClose !== false) s.end();
  });
}

/** The proxy program and a recording origin, for one test file. */
export interface ProxyAndOrigin {
  readonly origin: RecordingOrigin;
  readonly proxy: RunningProxy;
  /** `http://127.0.0.1:<origin port>`, to put in front of a path. */
  readonly base: string;
}

/** Starts a recording origin and the proxy program on `address` (with `limits`). */
export async function startProxyAndOrigin(
  address: string,
  limits?: Record<string, number>,
): Promise<ProxyAndOrigin> {
  const origin = await startRecordingOrigin();
  const proxy = await startProgram({
    address,
    port: await freePort(address),
    ...(limits ? { limits } : {}),
  });
  return { origin, proxy, base: `http://127.0.0.1:${origin.port}` };
}

/** Stops what {@link startProxyAndOrigin} started (and any proxy program left). */
export async function stopProxyAndOrigin(t: Partial<ProxyAndOrigin>): Promise<void> {
  await t.origin?.close();
  await stopProgram(t.proxy);
  await killAllSpawned();
}
