/**
 * The RPC engine: frames packets on a Duplex, matches replies to calls by
 * serial, runs streams and the keepalive program.
 *
 * @module
 */
import { type Duplex, Readable } from 'node:stream';
import { LibvirtError, RpcError } from './errors.js';
import {
  decodeHeader,
  encodeCall,
  encodePacket,
  HEADER_LEN,
  type Header,
  KEEPALIVE_PROGRAM,
  KEEPALIVE_PROTOCOL_VERSION,
  KeepaliveProc,
  MESSAGE_MAX,
  MessageStatus,
  MessageType,
  type Procedure,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
  remoteErrorCodec,
  STREAM_CHUNK,
} from './protocol.js';
import { decode } from './xdr.js';

/** Bytes an upload may queue on the transport before it waits for a drain. */
const UPLOAD_BUFFER = 4 * 1024 * 1024;

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call: it rejects at once with an `ERR_RPC_ABORTED` {@link RpcError}. */
  signal?: AbortSignal | undefined;
  /** Gives up after this many milliseconds with an `ERR_RPC_TIMEOUT` {@link RpcError}. */
  timeoutMs?: number | undefined;
}

/**
 * What happens to the connection when a call is abandoned (cancelled or
 * timed out) before its reply: `'drop'` keeps the connection and discards
 * the late reply by its serial; `'close'` closes the connection, failing
 * every other pending call.
 */
export type AbandonPolicy = 'drop' | 'close';

/** Keepalive settings: a ping after `intervalMs` of silence; dead after `count` silent intervals. */
export interface KeepaliveOptions {
  /** Milliseconds of silence before a ping. */
  intervalMs: number;
  /** Silent intervals after which the peer is declared dead. */
  count: number;
}

/** Options of an {@link RpcConnection}. */
export interface RpcConnectionOptions {
  /** Default `'drop'`. */
  abandonPolicy?: AbandonPolicy | undefined;
  /** Applied to calls that do not pass their own `timeoutMs`. None by default. */
  defaultTimeoutMs?: number | undefined;
}

interface CallEntry {
  kind: 'call';
  name: string;
  onReply(status: number, payload: Buffer): void;
  fail(err: Error): void;
}

interface StreamEntry {
  kind: 'stream';
  name: string;
  onReply(status: number, payload: Buffer): void;
  onStream(status: number, payload: Buffer): void;
  fail(err: Error): void;
}

type Entry = CallEntry | StreamEntry;

function abortError(signal: AbortSignal, name: string): RpcError {
  return new RpcError('ERR_RPC_ABORTED', `${name}: aborted`, { cause: signal.reason });
}

function timeoutError(ms: number, name: string): RpcError {
  return new RpcError('ERR_RPC_TIMEOUT', `${name}: no reply within ${ms} ms`);
}

/**
 * One libvirt RPC connection over a Duplex (a unix socket, an SSH channel,
 * anything). Calls run concurrently and are matched to replies by serial.
 * Most users want {@link LibvirtClient}, which wraps this with typed calls.
 */
export class RpcConnection {
  private readonly io: Duplex;
  private readonly policy: AbandonPolicy;
  private readonly defaultTimeoutMs: number | undefined;
  private readonly pending = new Map<number, Entry>();
  private readonly abandoned = new Set<number>();
  /** The procedure of each open stream, for the stream packets sent under its serial. */
  private readonly procOf = new Map<number, number>();
  private nextSerial = 1;
  private chunks: Buffer[] = [];
  private have = 0;
  private failure: Error | undefined;
  private lastRx = Date.now();
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private pausedBy = 0;
  private readonly closedPromise: Promise<Error>;
  private resolveClosed!: (err: Error) => void;

  /** Takes over `io`: it is read, written and destroyed by this connection from now on. */
  constructor(io: Duplex, opts: RpcConnectionOptions = {}) {
    this.io = io;
    this.policy = opts.abandonPolicy ?? 'drop';
    this.defaultTimeoutMs = opts.defaultTimeoutMs;
    this.closedPromise = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    io.on('data', (chunk: Buffer) => this.onData(chunk));
    io.on('error', (err: Error) =>
      this.fail(
        new RpcError('ERR_RPC_CLOSED', `connection failed: ${err.message}`, { cause: err }),
      ),
    );
    io.on('end', () => this.fail(new RpcError('ERR_RPC_CLOSED', 'connection closed by the peer')));
    io.on('close', () => this.fail(new RpcError('ERR_RPC_CLOSED', 'connection closed')));
  }

  /** Resolves with the reason once the connection has closed, for any reason. */
  get closed(): Promise<Error> {
    return this.closedPromise;
  }

  /** Whether the connection can still carry calls. */
  get isOpen(): boolean {
    return this.failure === undefined;
  }

  /** Calls awaiting a reply, and streams in progress. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** Closes the connection now; every pending call fails with `err` (or `ERR_RPC_CLOSED`). */
  destroy(err?: Error): void {
    this.fail(err ?? new RpcError('ERR_RPC_CLOSED', 'connection closed by the client'));
  }

  private fail(err: Error): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    if (this.keepaliveTimer !== undefined) clearInterval(this.keepaliveTimer);
    const entries = [...this.pending.values()];
    this.pending.clear();
    this.abandoned.clear();
    this.procOf.clear();
    for (const e of entries) e.fail(err);
    this.io.destroy();
    this.resolveClosed(err);
  }

  private closedError(name: string): RpcError {
    return new RpcError('ERR_RPC_CLOSED', `${name}: the connection is closed`, {
      cause: this.failure,
    });
  }

  private onData(chunk: Buffer): void {
    this.lastRx = Date.now();
    this.chunks.push(chunk);
    this.have += chunk.length;
    while (this.failure === undefined && this.have >= 4) {
      const len = this.peekLength();
      if (len < HEADER_LEN || len > MESSAGE_MAX) {
        this.fail(new RpcError('ERR_RPC_PROTOCOL', `bad packet length ${len}`));
        return;
      }
      if (this.have < len) return;
      const packet = this.take(len);
      try {
        this.dispatch(packet);
      } catch (err) {
        this.fail(
          new RpcError('ERR_RPC_PROTOCOL', `bad packet: ${(err as Error).message}`, { cause: err }),
        );
      }
    }
  }

  private peekLength(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readUInt32BE(0);
    return this.copyOut(4).readUInt32BE(0);
  }

  private copyOut(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    for (const c of this.chunks) {
      const k = Math.min(c.length, n - at);
      c.copy(out, at, 0, k);
      at += k;
      if (at === n) break;
    }
    return out;
  }

  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = this.copyOut(n);
      let left = n;
      while (left > 0) {
        const c = this.chunks[0]!;
        if (c.length <= left) {
          left -= c.length;
          this.chunks.shift();
        } else {
          this.chunks[0] = c.subarray(left);
          left = 0;
        }
      }
    }
    this.have -= n;
    return out;
  }

  private dispatch(packet: Buffer): void {
    const h = decodeHeader(packet);
    const payload = packet.subarray(HEADER_LEN);
    if (h.prog === KEEPALIVE_PROGRAM) {
      if (h.proc === KeepaliveProc.PING) this.sendKeepalive(KeepaliveProc.PONG);
      return;
    }
    if (h.prog !== REMOTE_PROGRAM) return; // another program's events: not ours
    if (h.type === MessageType.REPLY) {
      const e = this.pending.get(h.serial);
      if (e === undefined) {
        this.abandoned.delete(h.serial);
        return;
      }
      if (e.kind === 'call') this.pending.delete(h.serial);
      e.onReply(h.status, payload);
      return;
    }
    if (h.type === MessageType.STREAM) {
      const e = this.pending.get(h.serial);
      if (e?.kind === 'stream') {
        e.onStream(h.status, payload);
      } else if (h.status !== MessageStatus.CONTINUE) {
        this.abandoned.delete(h.serial);
      }
    }
    // MESSAGE (events) and anything else: not subscribed, ignored.
  }

  private header(proc: number, type: number, serial: number, status: number): Header {
    return { prog: REMOTE_PROGRAM, vers: REMOTE_PROTOCOL_VERSION, proc, type, serial, status };
  }

  private sendKeepalive(proc: number): void {
    if (this.failure !== undefined) return;
    this.io.write(
      encodePacket({
        prog: KEEPALIVE_PROGRAM,
        vers: KEEPALIVE_PROTOCOL_VERSION,
        proc,
        type: MessageType.MESSAGE,
        serial: 0,
        status: MessageStatus.OK,
      }),
    );
  }

  /**
   * Starts the client side of the keepalive program: a ping after
   * `intervalMs` without traffic from the peer, and the connection closed
   * with `ERR_RPC_KEEPALIVE` after `count` silent intervals. Pings from the
   * peer are always answered. While a download is paused for backpressure
   * the peer cannot be heard, so the check waits.
   */
  startKeepalive(opts: KeepaliveOptions): void {
    if (this.keepaliveTimer !== undefined) clearInterval(this.keepaliveTimer);
    const tick = Math.max(10, Math.floor(opts.intervalMs / 2));
    this.keepaliveTimer = setInterval(() => {
      if (this.pausedBy > 0) {
        this.lastRx = Date.now();
        return;
      }
      const silent = Date.now() - this.lastRx;
      if (silent >= opts.intervalMs * opts.count) {
        this.fail(
          new RpcError('ERR_RPC_KEEPALIVE', `no answer from the peer for ${silent} ms (keepalive)`),
        );
      } else if (silent >= opts.intervalMs) {
        this.sendKeepalive(KeepaliveProc.PING);
      }
    }, tick);
    this.keepaliveTimer.unref();
  }

  /** Stops the keepalive timer (pings from the peer are still answered). */
  stopKeepalive(): void {
    if (this.keepaliveTimer !== undefined) clearInterval(this.keepaliveTimer);
    this.keepaliveTimer = undefined;
  }

  private abandon(serial: number, entry: Entry, err: Error, stream: boolean): void {
    if (this.pending.get(serial) !== entry) return;
    this.pending.delete(serial);
    entry.fail(err);
    if (this.policy === 'close') {
      this.fail(new RpcError('ERR_RPC_CLOSED', 'closed after an abandoned call', { cause: err }));
      return;
    }
    this.abandoned.add(serial);
    if (stream) {
      this.sendStream(entry.name, serial, MessageStatus.ERROR);
      this.procOf.delete(serial);
    }
  }

  /** Serials of abandoned calls whose late replies will be dropped (for tests and metrics). */
  get abandonedCount(): number {
    return this.abandoned.size;
  }

  private sendStream(_name: string, serial: number, status: number, data?: Uint8Array): boolean {
    if (this.failure !== undefined) return true;
    const proc = this.procOf.get(serial) ?? 0;
    const header = this.header(proc, MessageType.STREAM, serial, status);
    if (data === undefined || data.length < 4096) {
      return this.io.write(encodePacket(header, data));
    }
    // Large data goes out as header plus the caller's bytes, without a copy.
    const head = encodePacket(header);
    head.writeUInt32BE(head.length + data.length, 0);
    this.io.cork();
    this.io.write(head);
    const ok = this.io.write(data);
    this.io.uncork();
    return ok;
  }

  private serial(): number {
    const s = this.nextSerial;
    this.nextSerial = this.nextSerial >= 0xffff_ffff ? 1 : this.nextSerial + 1;
    return s;
  }

  /** Makes one call and resolves with its decoded reply. */
  call<A, R>(p: Procedure<A, R>, args: A, opts: CallOptions = {}): Promise<R> {
    if (this.failure !== undefined) return Promise.reject(this.closedError(p.name));
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortError(signal, p.name));
    const serial = this.serial();
    let bytes: Buffer;
    try {
      bytes = encodeCall(
        this.header(p.proc, MessageType.CALL, serial, MessageStatus.OK),
        p.args,
        args,
      );
    } catch (err) {
      return Promise.reject(err);
    }
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise<R>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const cleanup = () => {
        signal?.removeEventListener('abort', onAbort);
        if (timer !== undefined) clearTimeout(timer);
      };
      const entry: CallEntry = {
        kind: 'call',
        name: p.name,
        onReply: (status, payload) => {
          cleanup();
          if (status === MessageStatus.OK) {
            try {
              resolve(decode(p.ret, payload));
            } catch (err) {
              reject(
                new RpcError(
                  'ERR_RPC_PROTOCOL',
                  `${p.name}: bad reply: ${(err as Error).message}`,
                  {
                    cause: err,
                  },
                ),
              );
            }
          } else {
            reject(this.remoteError(p.name, payload));
          }
        },
        fail: (err) => {
          cleanup();
          reject(err);
        },
      };
      const onAbort = () => this.abandon(serial, entry, abortError(signal!, p.name), false);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => this.abandon(serial, entry, timeoutError(timeoutMs, p.name), false),
          timeoutMs,
        );
      }
      this.pending.set(serial, entry);
      this.io.write(bytes);
    });
  }

  private remoteError(name: string, payload: Buffer): Error {
    try {
      return new LibvirtError(decode(remoteErrorCodec, payload), name);
    } catch (err) {
      return new RpcError('ERR_RPC_PROTOCOL', `${name}: bad error reply`, { cause: err });
    }
  }

  /**
   * Starts a stream call (upload): resolves once the server accepted the
   * call, then writes `source` as stream packets of at most 256 KiB,
   * waiting for the transport to drain whenever 4 MiB are queued, so memory
   * stays bounded whatever the size. Ends with the finish handshake. A server
   * error mid-stream, the signal, the timeout or a lost connection rejects;
   * the first three abort the stream on the server and leave the
   * connection usable.
   */
  async upload<A>(
    p: Procedure<A, undefined>,
    args: A,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    opts: CallOptions = {},
  ): Promise<void> {
    const s = this.openStream(p, args, opts);
    try {
      await s.accepted;
      for await (const chunk of source) {
        for (let at = 0; at < chunk.length; at += STREAM_CHUNK) {
          s.check();
          const part = chunk.subarray(at, Math.min(chunk.length, at + STREAM_CHUNK));
          this.sendStream(p.name, s.serial, MessageStatus.CONTINUE, part);
          if (this.io.writableLength >= UPLOAD_BUFFER) await s.drained(this.io);
        }
      }
      s.check();
      s.finishing = true;
      this.sendStream(p.name, s.serial, MessageStatus.OK);
      await s.done;
    } catch (err) {
      s.abort(err as Error);
      throw s.error ?? err;
    } finally {
      s.cleanup();
    }
  }

  /**
   * Starts a stream call (download) and resolves, once the server accepted
   * it, with a Readable of the data. When the Readable's buffer is full the
   * transport is paused (so other replies on this connection wait too);
   * destroying the Readable aborts the stream on the server. A server error
   * mid-stream destroys the Readable with that error. A reader that stalls
   * longer than the daemon's keepalive window (about 30 s by default) gets
   * the connection dropped by the daemon, whose pings go unread meanwhile.
   */
  async download<A>(
    p: Procedure<A, undefined>,
    args: A,
    opts: CallOptions & { highWaterMark?: number } = {},
  ): Promise<Readable> {
    let paused = false;
    const resume = () => {
      if (!paused) return;
      paused = false;
      this.pausedBy--;
      if (this.pausedBy === 0) this.io.resume();
    };
    const out = new Readable({
      highWaterMark: opts.highWaterMark ?? 1024 * 1024,
      read: () => resume(),
      destroy: (err, cb) => {
        resume();
        if (!s.settled) s.abort(err ?? new RpcError('ERR_RPC_ABORTED', `${p.name}: destroyed`));
        s.cleanup();
        cb(err);
      },
    });
    const s = this.openStream(p, args, opts, {
      data: (payload) => {
        if (!out.push(payload) && !paused) {
          paused = true;
          this.pausedBy++;
          this.io.pause();
        }
      },
      eof: () => {
        s.finishing = true;
        this.sendStream(p.name, s.serial, MessageStatus.OK);
      },
    });
    s.done.then(
      () => {
        s.cleanup();
        out.push(null);
      },
      (err: Error) => {
        s.cleanup();
        // Before the call was accepted the caller gets the error from this
        // method instead, and the Readable is never handed out.
        if (s.isAccepted) out.destroy(err);
      },
    );
    await s.accepted;
    return out;
  }

  private openStream<A>(
    p: Procedure<A, undefined>,
    args: A,
    opts: CallOptions,
    sink?: { data(payload: Buffer): void; eof(): void },
  ): StreamState {
    const s = new StreamState(p.name, this.serial());
    if (this.failure !== undefined) {
      s.settle(this.closedError(p.name));
      return s;
    }
    const { signal } = opts;
    if (signal?.aborted) {
      s.settle(abortError(signal, p.name));
      return s;
    }
    let bytes: Buffer;
    try {
      bytes = encodeCall(
        this.header(p.proc, MessageType.CALL, s.serial, MessageStatus.OK),
        p.args,
        args,
      );
    } catch (err) {
      s.settle(err as Error);
      return s;
    }
    let eofSeen = false;
    const entry: StreamEntry = {
      kind: 'stream',
      name: p.name,
      onReply: (status, payload) => {
        if (status === MessageStatus.OK && !s.isAccepted) {
          s.accept();
          return;
        }
        this.pending.delete(s.serial);
        this.procOf.delete(s.serial);
        s.settle(
          status === MessageStatus.OK
            ? new RpcError('ERR_RPC_PROTOCOL', `${p.name}: unexpected reply`)
            : this.remoteError(p.name, payload),
        );
      },
      onStream: (status, payload) => {
        if (status === MessageStatus.CONTINUE) {
          if (sink === undefined || eofSeen) return;
          if (payload.length > 0) {
            sink.data(payload);
          } else {
            // An empty data packet is the server's end of data.
            eofSeen = true;
            sink.eof();
          }
          return;
        }
        if (status === MessageStatus.ERROR) {
          this.pending.delete(s.serial);
          this.procOf.delete(s.serial);
          s.settle(this.remoteError(p.name, payload));
          return;
        }
        // OK: the end of the server's data (download) or the finish confirmation.
        if (sink !== undefined && !eofSeen && !s.finishing) {
          eofSeen = true;
          sink.eof();
          return;
        }
        this.pending.delete(s.serial);
        this.procOf.delete(s.serial);
        s.settle();
      },
      fail: (err) => s.settle(err),
    };
    s.abortOnServer = (err) => {
      if (this.pending.get(s.serial) !== entry) return;
      this.abandon(s.serial, entry, err, true);
    };
    s.connectionError = () => (this.failure === undefined ? undefined : this.closedError(p.name));
    const onAbort = () => s.abort(abortError(signal!, p.name));
    signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => s.abort(timeoutError(timeoutMs, p.name)), timeoutMs);
    s.cleanups.push(() => {
      signal?.removeEventListener('abort', onAbort);
      if (timer !== undefined) clearTimeout(timer);
    });
    this.pending.set(s.serial, entry);
    this.procOf.set(s.serial, p.proc);
    this.io.write(bytes);
    return s;
  }
}

/** The state of one stream call, shared by upload and download. */
class StreamState {
  readonly accepted: Promise<void>;
  readonly done: Promise<void>;
  error: Error | undefined;
  settled = false;
  isAccepted = false;
  finishing = false;
  cleanups: (() => void)[] = [];
  abortOnServer: (err: Error) => void = () => {};
  connectionError: () => Error | undefined = () => undefined;
  private resolveAccepted!: () => void;
  private rejectAccepted!: (err: Error) => void;
  private resolveDone!: () => void;
  private rejectDone!: (err: Error) => void;
  private wakers = new Set<(err?: Error) => void>();

  constructor(
    readonly name: string,
    readonly serial: number,
  ) {
    this.accepted = new Promise((resolve, reject) => {
      this.resolveAccepted = resolve;
      this.rejectAccepted = reject;
    });
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.accepted.catch(() => {});
    this.done.catch(() => {});
  }

  accept(): void {
    this.isAccepted = true;
    this.resolveAccepted();
  }

  settle(err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.error = err;
    if (err === undefined) {
      this.resolveAccepted();
      this.resolveDone();
    } else {
      this.rejectAccepted(err);
      this.rejectDone(err);
    }
    for (const w of this.wakers) w(err);
    this.wakers.clear();
  }

  /** Aborts the stream on the server (when still open) and settles with `err`. */
  abort(err: Error): void {
    if (this.settled) return;
    this.abortOnServer(err);
    this.settle(err);
  }

  check(): void {
    if (this.error !== undefined) throw this.error;
    const closed = this.connectionError();
    if (closed !== undefined) throw closed;
  }

  drained(io: Duplex): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.error !== undefined) {
        reject(this.error);
        return;
      }
      const onDrain = () => done();
      const onClose = () => done(this.connectionError());
      const done = (err?: Error) => {
        io.off('drain', onDrain);
        io.off('close', onClose);
        this.wakers.delete(done);
        if (err !== undefined) reject(err);
        else resolve();
      };
      io.on('drain', onDrain);
      io.on('close', onClose);
      this.wakers.add(done);
    });
  }

  cleanup(): void {
    for (const c of this.cleanups.splice(0)) c();
  }
}
