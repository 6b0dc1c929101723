/**
 * The RPC engine: frames packets on a Duplex, matches replies to calls by
 * serial, runs streams and the keepalive program.
 *
 * @module
 */
import { type Duplex, Readable } from 'node:stream';
import { LibvirtError, RpcError } from './errors.js';
import {
  appendCall,
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
import { type Codec, decode, XdrWriter } from './xdr.js';

/** Bytes an upload may queue on the transport before it waits for a drain. */
const UPLOAD_BUFFER = 4 * 1024 * 1024;
/** The first size of a write batch's buffer; it grows as calls are added. */
const BATCH_INITIAL = 1024;

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

interface StreamEntry {
  kind: 'stream';
  name: string;
  /** The reply's payload is `buf[start, end)`. */
  onReply(status: number, buf: Buffer, start: number, end: number): void;
  onStream(status: number, payload: Buffer): void;
  fail(err: Error): void;
}

type Entry = PendingCall | StreamEntry;

function abortError(signal: AbortSignal, name: string): RpcError {
  return new RpcError('ERR_RPC_ABORTED', `${name}: aborted`, { cause: signal.reason });
}

function timeoutError(ms: number, name: string): RpcError {
  return new RpcError('ERR_RPC_TIMEOUT', `${name}: no reply within ${ms} ms`);
}

/** Shared by every call: a timer's callback gets its call as the argument, so no closure per call. */
function onCallTimeout(c: PendingCall): void {
  c.timer = undefined;
  c.abandon(c, timeoutError(c.timeoutMs, c.name));
}

/**
 * One call awaiting its reply. It is its own abort listener (`handleEvent`)
 * and its timer's argument, so a call costs one object and one promise.
 */
class PendingCall {
  /** Whether the call still waits in the write batch (not yet handed to the transport). */
  queued = false;
  /** Where its bytes are in the write batch. */
  start = 0;
  end = 0;
  timer: NodeJS.Timeout | undefined;
  readonly kind = 'call';
  resolve!: (v: unknown) => void;
  reject!: (err: Error) => void;

  constructor(
    readonly name: string,
    readonly serial: number,
    readonly ret: Codec<unknown>,
    readonly signal: AbortSignal | undefined,
    readonly timeoutMs: number,
    readonly abandon: (c: PendingCall, err: Error) => void,
    readonly remoteError: (name: string, payload: Buffer) => Error,
  ) {}

  handleEvent(): void {
    this.abandon(this, abortError(this.signal!, this.name));
  }

  private cleanup(): void {
    this.signal?.removeEventListener('abort', this);
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  onReply(status: number, buf: Buffer, start: number, end: number): void {
    this.cleanup();
    if (status !== MessageStatus.OK) {
      this.reject(this.remoteError(this.name, buf.subarray(start, end)));
      return;
    }
    let v: unknown;
    try {
      v = decode(this.ret, buf, start, end);
    } catch (err) {
      this.reject(
        new RpcError('ERR_RPC_PROTOCOL', `${this.name}: bad reply: ${(err as Error).message}`, {
          cause: err,
        }),
      );
      return;
    }
    this.resolve(v);
  }

  fail(err: Error): void {
    this.cleanup();
    this.reject(err);
  }
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
  /** The start of a packet not yet whole: its chunks, and their total length. */
  private partial: Buffer[] = [];
  private partialLength = 0;
  /**
   * Calls made in this turn of the event loop, encoded one after the other
   * into `out` and written together when the turn ends.
   */
  private batch: PendingCall[] = [];
  private out = new XdrWriter(BATCH_INITIAL);
  /** Whether a call of the batch was cancelled before it was written. */
  private batchHoles = false;
  private flushScheduled = false;
  private readonly flushBatch = () => this.flush();
  private readonly abandonCall = (c: PendingCall, err: Error) =>
    this.abandon(c.serial, c, err, false);
  private readonly remoteErrorOf = (name: string, payload: Buffer) =>
    this.remoteError(name, payload);
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
    this.batch = [];
    this.out = new XdrWriter(BATCH_INITIAL);
    this.partial = [];
    this.partialLength = 0;
    for (const e of entries) e.fail(err);
    this.io.destroy();
    this.resolveClosed(err);
  }

  private closedError(name: string): RpcError {
    return new RpcError('ERR_RPC_CLOSED', `${name}: the connection is closed`, {
      cause: this.failure,
    });
  }

  /**
   * Parses every whole packet of `chunk` in one pass, straight from the
   * chunk; only a packet split across reads is gathered and copied once,
   * when its last byte arrives.
   */
  private onData(chunk: Buffer): void {
    this.lastRx = Date.now();
    let buf = chunk;
    if (this.partialLength > 0) {
      this.partial.push(chunk);
      this.partialLength += chunk.length;
      if (this.partialLength < 4) return;
      const first = this.partial[0]!;
      const len =
        first.length >= 4 ? first.readUInt32BE(0) : Buffer.concat(this.partial, 4).readUInt32BE(0);
      if (!this.lengthOk(len) || this.partialLength < len) return;
      buf = Buffer.concat(this.partial, this.partialLength);
      this.partial = [];
      this.partialLength = 0;
    }
    let at = 0;
    while (this.failure === undefined) {
      const left = buf.length - at;
      if (left < 4) break;
      const len = buf.readUInt32BE(at);
      if (!this.lengthOk(len)) return;
      if (left < len) break;
      try {
        this.dispatch(buf, at, at + len);
      } catch (err) {
        this.fail(
          new RpcError('ERR_RPC_PROTOCOL', `bad packet: ${(err as Error).message}`, { cause: err }),
        );
      }
      at += len;
    }
    if (this.failure === undefined && at < buf.length) {
      this.partial.push(at === 0 ? buf : buf.subarray(at));
      this.partialLength = buf.length - at;
    }
  }

  private lengthOk(len: number): boolean {
    if (len >= HEADER_LEN && len <= MESSAGE_MAX) return true;
    this.fail(new RpcError('ERR_RPC_PROTOCOL', `bad packet length ${len}`));
    return false;
  }

  /** Handles the packet at `buf[start, end)`, reading its header in place. */
  private dispatch(buf: Buffer, start: number, end: number): void {
    const prog = buf.readUInt32BE(start + 4);
    const proc = buf.readInt32BE(start + 12);
    const type = buf.readInt32BE(start + 16);
    const serial = buf.readUInt32BE(start + 20);
    const status = buf.readInt32BE(start + 24);
    if (prog === KEEPALIVE_PROGRAM) {
      if (proc === KeepaliveProc.PING) this.sendKeepalive(KeepaliveProc.PONG);
      return;
    }
    if (prog !== REMOTE_PROGRAM) return; // another program's events: not ours
    if (type === MessageType.REPLY) {
      const e = this.pending.get(serial);
      if (e === undefined) {
        this.abandoned.delete(serial);
        return;
      }
      if (e.kind === 'call') this.pending.delete(serial);
      e.onReply(status, buf, start + HEADER_LEN, end);
      return;
    }
    if (type === MessageType.STREAM) {
      const e = this.pending.get(serial);
      if (e?.kind === 'stream') {
        e.onStream(status, buf.subarray(start + HEADER_LEN, end));
      } else if (status !== MessageStatus.CONTINUE) {
        this.abandoned.delete(serial);
      }
    }
    // MESSAGE (events) and anything else: not subscribed, ignored.
  }

  /**
   * Writes the calls made since the last flush as one buffer, in one write:
   * many calls made in one turn of the event loop cost one syscall. Calls
   * cancelled meanwhile are left out, never sent.
   */
  private flush(): void {
    this.flushScheduled = false;
    const calls = this.batch;
    if (calls.length === 0) return;
    const out = this.out.finish();
    const holes = this.batchHoles;
    this.batch = [];
    this.out = new XdrWriter(BATCH_INITIAL);
    this.batchHoles = false;
    if (this.failure !== undefined) return;
    for (const c of calls) c.queued = false;
    if (!holes) {
      this.io.write(out);
      return;
    }
    // Leave out the calls cancelled before they were written.
    const parts: Buffer[] = [];
    let total = 0;
    for (const c of calls) {
      if (this.pending.get(c.serial) !== c) continue;
      parts.push(out.subarray(c.start, c.end));
      total += c.end - c.start;
    }
    if (total > 0) this.io.write(Buffer.concat(parts, total));
  }

  /** Writes now, after the calls still waiting in the batch, keeping the order of packets. */
  private writeNow(bytes: Uint8Array): boolean {
    if (this.batch.length > 0) this.flush();
    return this.io.write(bytes);
  }

  private header(proc: number, type: number, serial: number, status: number): Header {
    return { prog: REMOTE_PROGRAM, vers: REMOTE_PROTOCOL_VERSION, proc, type, serial, status };
  }

  private sendKeepalive(proc: number): void {
    if (this.failure !== undefined) return;
    this.writeNow(
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
    if (entry.kind === 'call' && entry.queued) {
      // Still in the write batch: it is left out, so no reply will come.
      entry.queued = false;
      this.batchHoles = true;
      entry.fail(err);
      return;
    }
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
      return this.writeNow(encodePacket(header, data));
    }
    // Large data goes out as header plus the caller's bytes, without a copy.
    const head = encodePacket(header);
    head.writeUInt32BE(head.length + data.length, 0);
    if (this.batch.length > 0) this.flush();
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

  /**
   * Makes one call and resolves with its decoded reply. The call is written
   * together with the others made in the same turn of the event loop.
   */
  call<A, R>(p: Procedure<A, R>, args: A, opts: CallOptions = {}): Promise<R> {
    if (this.failure !== undefined) return Promise.reject(this.closedError(p.name));
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortError(signal, p.name));
    const serial = this.serial();
    const start = this.out.length;
    try {
      appendCall(
        this.out,
        REMOTE_PROGRAM,
        REMOTE_PROTOCOL_VERSION,
        p.proc,
        MessageType.CALL,
        serial,
        MessageStatus.OK,
        p.args,
        args,
      );
    } catch (err) {
      return Promise.reject(err);
    }
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const c = new PendingCall(
      p.name,
      serial,
      p.ret,
      signal,
      timeoutMs ?? 0,
      this.abandonCall,
      this.remoteErrorOf,
    );
    const promise = new Promise<R>((resolve, reject) => {
      c.resolve = resolve as (v: unknown) => void;
      c.reject = reject;
    });
    signal?.addEventListener('abort', c, { once: true });
    if (timeoutMs !== undefined) c.timer = setTimeout(onCallTimeout, timeoutMs, c);
    c.queued = true;
    c.start = start;
    c.end = this.out.length;
    this.pending.set(serial, c);
    this.batch.push(c);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(this.flushBatch);
    }
    return promise;
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
      onReply: (status, buf, start, end) => {
        if (status === MessageStatus.OK && !s.isAccepted) {
          s.accept();
          return;
        }
        this.pending.delete(s.serial);
        this.procOf.delete(s.serial);
        s.settle(
          status === MessageStatus.OK
            ? new RpcError('ERR_RPC_PROTOCOL', `${p.name}: unexpected reply`)
            : this.remoteError(p.name, buf.subarray(start, end)),
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
    this.writeNow(bytes);
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
