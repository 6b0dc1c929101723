/**
 * The RPC engine: frames packets on a Duplex, matches replies to calls by
 * serial and owns the connection's lifecycle. Stream calls are in
 * `streams.ts` and the keepalive program in `keepalive.ts`, each reaching
 * the connection through a small link.
 *
 * @module
 */
import type { Duplex, Readable } from 'node:stream';
import { abortError, type CallOptions, PendingCall } from './call.js';
import { RpcError } from './errors.js';
import { Keepalive, type KeepaliveLink, type KeepaliveOptions } from './keepalive.js';
import {
  appendCall,
  HEADER_LEN,
  KEEPALIVE_PROGRAM,
  MESSAGE_MAX,
  MessageStatus,
  MessageType,
  type Procedure,
  QEMU_PROGRAM,
  QEMU_PROTOCOL_VERSION,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
} from './protocol.js';
import { download, type StreamEntry, type StreamLink, upload } from './streams.js';
import { XdrWriter } from './xdr.js';

export type { CallOptions } from './call.js';
export type { KeepaliveOptions } from './keepalive.js';

/** The first size of a write batch's buffer; it grows as calls are added. */
const BATCH_INITIAL = 1024;

/**
 * What happens to the connection when a call is abandoned (cancelled or
 * timed out) before its reply: `'drop'` keeps the connection and discards
 * the late reply by its serial; `'close'` closes the connection, failing
 * every other pending call.
 */
export type AbandonPolicy = 'drop' | 'close';

/** Options of an {@link RpcConnection}. */
export interface RpcConnectionOptions {
  /** Default `'drop'`. */
  abandonPolicy?: AbandonPolicy | undefined;
  /** Applied to calls that do not pass their own `timeoutMs`. None by default. */
  defaultTimeoutMs?: number | undefined;
}

type Entry = PendingCall | StreamEntry;

/**
 * One libvirt RPC connection over a Duplex (a unix socket, an SSH channel,
 * anything). Calls run concurrently and are matched to replies by serial.
 * Most users want {@link LibvirtClient}, which wraps this with typed calls.
 */
export class RpcConnection {
  readonly #io: Duplex;
  readonly #policy: AbandonPolicy;
  readonly #defaultTimeoutMs: number | undefined;
  readonly #pending = new Map<number, Entry>();
  readonly #abandoned = new Set<number>();
  #nextSerial = 1;
  /** The start of a packet not yet whole: its chunks, and their total length. */
  #partial: Buffer[] = [];
  #partialLength = 0;
  /**
   * Calls made in this turn of the event loop, encoded one after the other
   * into `#out` and written together when the turn ends.
   */
  #batch: PendingCall[] = [];
  #out = new XdrWriter(BATCH_INITIAL);
  /** Whether a call of the batch was cancelled before it was written. */
  #batchHoles = false;
  #flushScheduled = false;
  readonly #flushBatch = () => this.#flush();
  readonly #abandonCall = (c: PendingCall, err: Error) => {
    this.#abandon(c.serial, c, err);
  };
  #failure: Error | undefined;
  /** Downloads that paused reading for backpressure. */
  #pausedBy = 0;
  /** What streams and the keepalive reach of this connection. */
  readonly #link: StreamLink & KeepaliveLink;
  readonly #keepalive: Keepalive;
  readonly #closed: Promise<Error>;
  #resolveClosed!: (err: Error) => void;

  /** Takes over `io`: it is read, written and destroyed by this connection from now on. */
  constructor(io: Duplex, opts: RpcConnectionOptions = {}) {
    this.#io = io;
    this.#policy = opts.abandonPolicy ?? 'drop';
    this.#defaultTimeoutMs = opts.defaultTimeoutMs;
    this.#link = {
      io,
      defaultTimeoutMs: opts.defaultTimeoutMs,
      serial: () => this.#serial(),
      closedError: (name) => (this.#failure === undefined ? undefined : this.#closedError(name)),
      write: (head: Uint8Array, data?: Uint8Array) => this.#write(head, data),
      add: (serial, entry) => {
        this.#pending.set(serial, entry);
      },
      remove: (serial) => {
        this.#pending.delete(serial);
      },
      abandon: (serial, entry, err) => this.#abandon(serial, entry, err),
      pauseReads: () => {
        this.#pausedBy++;
        this.#io.pause();
      },
      resumeReads: () => {
        this.#pausedBy--;
        if (this.#pausedBy === 0) this.#io.resume();
      },
      readsPaused: () => this.#pausedBy > 0,
      fail: (err) => this.#fail(err),
    };
    this.#keepalive = new Keepalive(this.#link);
    this.#closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    io.on('data', (chunk: Buffer) => this.#onData(chunk));
    io.on('error', (err: Error) =>
      this.#fail(
        new RpcError('ERR_RPC_CLOSED', `connection failed: ${err.message}`, { cause: err }),
      ),
    );
    io.on('end', () => this.#fail(new RpcError('ERR_RPC_CLOSED', 'connection closed by the peer')));
    io.on('close', () => this.#fail(new RpcError('ERR_RPC_CLOSED', 'connection closed')));
  }

  /** Resolves with the reason once the connection has closed, for any reason. */
  get closed(): Promise<Error> {
    return this.#closed;
  }

  /** Whether the connection can still carry calls. */
  get isOpen(): boolean {
    return this.#failure === undefined;
  }

  /** Calls awaiting a reply, and streams in progress. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Serials of abandoned calls whose late replies will be dropped (for tests and metrics). */
  get abandonedCount(): number {
    return this.#abandoned.size;
  }

  /** Closes the connection now; every pending call fails with `err` (or `ERR_RPC_CLOSED`). */
  destroy(err?: Error): void {
    this.#fail(err ?? new RpcError('ERR_RPC_CLOSED', 'connection closed by the client'));
  }

  #fail(err: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = err;
    this.#keepalive.stop();
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    this.#abandoned.clear();
    this.#batch = [];
    this.#out = new XdrWriter(BATCH_INITIAL);
    this.#partial = [];
    this.#partialLength = 0;
    for (const e of entries) e.fail(err);
    this.#io.destroy();
    this.#resolveClosed(err);
  }

  #closedError(name: string): RpcError {
    return new RpcError('ERR_RPC_CLOSED', `${name}: the connection is closed`, {
      cause: this.#failure,
    });
  }

  /**
   * Parses every whole packet of `chunk` in one pass, straight from the
   * chunk; only a packet split across reads is gathered and copied once,
   * when its last byte arrives.
   */
  #onData(chunk: Buffer): void {
    this.#keepalive.heard();
    let buf = chunk;
    if (this.#partialLength > 0) {
      this.#partial.push(chunk);
      this.#partialLength += chunk.length;
      if (this.#partialLength < 4) return;
      const first = this.#partial[0]!;
      const len =
        first.length >= 4 ? first.readUInt32BE(0) : Buffer.concat(this.#partial, 4).readUInt32BE(0);
      if (!this.#lengthOk(len) || this.#partialLength < len) return;
      buf = Buffer.concat(this.#partial, this.#partialLength);
      this.#partial = [];
      this.#partialLength = 0;
    }
    let at = 0;
    while (this.#failure === undefined) {
      const left = buf.length - at;
      if (left < 4) break;
      const len = buf.readUInt32BE(at);
      if (!this.#lengthOk(len)) return;
      if (left < len) break;
      try {
        this.#dispatch(buf, at, at + len);
      } catch (err) {
        this.#fail(
          new RpcError('ERR_RPC_PROTOCOL', `bad packet: ${(err as Error).message}`, { cause: err }),
        );
      }
      at += len;
    }
    if (this.#failure === undefined && at < buf.length) {
      this.#partial.push(at === 0 ? buf : buf.subarray(at));
      this.#partialLength = buf.length - at;
    }
  }

  #lengthOk(len: number): boolean {
    if (len >= HEADER_LEN && len <= MESSAGE_MAX) return true;
    this.#fail(new RpcError('ERR_RPC_PROTOCOL', `bad packet length ${len}`));
    return false;
  }

  /** Handles the packet at `buf[start, end)`, reading its header in place. */
  #dispatch(buf: Buffer, start: number, end: number): void {
    const prog = buf.readUInt32BE(start + 4);
    const proc = buf.readInt32BE(start + 12);
    const type = buf.readInt32BE(start + 16);
    const serial = buf.readUInt32BE(start + 20);
    const status = buf.readInt32BE(start + 24);
    if (prog === KEEPALIVE_PROGRAM) {
      this.#keepalive.onPacket(proc);
      return;
    }
    // Replies of the QEMU program come by serial like the remote program's.
    if (prog !== REMOTE_PROGRAM && prog !== QEMU_PROGRAM) return; // not ours
    if (type === MessageType.REPLY) {
      const e = this.#pending.get(serial);
      if (e === undefined) {
        this.#abandoned.delete(serial);
        return;
      }
      if (e.kind === 'call') this.#pending.delete(serial);
      e.onReply(status, buf, start + HEADER_LEN, end);
      return;
    }
    if (type === MessageType.STREAM) {
      const e = this.#pending.get(serial);
      if (e?.kind === 'stream') {
        e.onStream(status, buf.subarray(start + HEADER_LEN, end));
      } else if (status !== MessageStatus.CONTINUE) {
        this.#abandoned.delete(serial);
      }
    }
    // MESSAGE (events) and anything else: not subscribed, ignored.
  }

  /**
   * Writes the calls made since the last flush as one buffer, in one write:
   * many calls made in one turn of the event loop cost one syscall. Calls
   * cancelled meanwhile are left out, never sent.
   */
  #flush(): void {
    this.#flushScheduled = false;
    const calls = this.#batch;
    if (calls.length === 0) return;
    const out = this.#out.finish();
    const holes = this.#batchHoles;
    this.#batch = [];
    this.#out = new XdrWriter(BATCH_INITIAL);
    this.#batchHoles = false;
    if (this.#failure !== undefined) return;
    for (const c of calls) c.queued = false;
    if (!holes) {
      this.#io.write(out);
      return;
    }
    // Leave out the calls cancelled before they were written.
    const parts: Buffer[] = [];
    let total = 0;
    for (const c of calls) {
      if (this.#pending.get(c.serial) !== c) continue;
      parts.push(out.subarray(c.start, c.end));
      total += c.end - c.start;
    }
    if (total > 0) this.#io.write(Buffer.concat(parts, total));
  }

  /**
   * Writes `head` now, after the calls still waiting in the batch, keeping
   * the order of packets; `data`, when given, goes right after it without a
   * copy. Nothing is written once the connection is closed.
   */
  #write(head: Uint8Array, data?: Uint8Array): boolean {
    if (this.#failure !== undefined) return true;
    if (this.#batch.length > 0) this.#flush();
    if (data === undefined) return this.#io.write(head);
    this.#io.cork();
    this.#io.write(head);
    const ok = this.#io.write(data);
    this.#io.uncork();
    return ok;
  }

  /**
   * Starts the client side of the keepalive program: a ping after
   * `intervalMs` without traffic from the peer, and the connection closed
   * with `ERR_RPC_KEEPALIVE` after `count` silent intervals. Pings from the
   * peer are always answered. While a download is paused for backpressure
   * the peer cannot be heard, so the check waits.
   */
  startKeepalive(opts: KeepaliveOptions): void {
    this.#keepalive.start(opts);
  }

  /** Stops the keepalive timer (pings from the peer are still answered). */
  stopKeepalive(): void {
    this.#keepalive.stop();
  }

  /**
   * Abandons a call or a stream before its reply. True when the connection
   * stays open and drops the late reply by its serial.
   */
  #abandon(serial: number, entry: Entry, err: Error): boolean {
    if (this.#pending.get(serial) !== entry) return false;
    this.#pending.delete(serial);
    if (entry.kind === 'call' && entry.queued) {
      // Still in the write batch: it is left out, so no reply will come.
      entry.queued = false;
      this.#batchHoles = true;
      entry.fail(err);
      return false;
    }
    entry.fail(err);
    if (this.#policy === 'close') {
      this.#fail(new RpcError('ERR_RPC_CLOSED', 'closed after an abandoned call', { cause: err }));
      return false;
    }
    this.#abandoned.add(serial);
    return true;
  }

  #serial(): number {
    const s = this.#nextSerial;
    this.#nextSerial = this.#nextSerial >= 0xffff_ffff ? 1 : this.#nextSerial + 1;
    return s;
  }

  /**
   * Makes one call and resolves with its decoded reply. The call is written
   * together with the others made in the same turn of the event loop.
   */
  call<A, R>(p: Procedure<A, R>, args: A, opts: CallOptions = {}): Promise<R> {
    if (this.#failure !== undefined) return Promise.reject(this.#closedError(p.name));
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortError(signal, p.name));
    const serial = this.#serial();
    const start = this.#out.length;
    try {
      appendCall(
        this.#out,
        p.program ?? REMOTE_PROGRAM,
        p.program === undefined ? REMOTE_PROTOCOL_VERSION : QEMU_PROTOCOL_VERSION,
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
    const c = new PendingCall(
      p.name,
      serial,
      p.ret,
      signal,
      opts.timeoutMs ?? this.#defaultTimeoutMs,
      this.#abandonCall,
    );
    c.queued = true;
    c.start = start;
    c.end = this.#out.length;
    this.#pending.set(serial, c);
    this.#batch.push(c);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      process.nextTick(this.#flushBatch);
    }
    return c.promise as Promise<R>;
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
  upload<A>(
    p: Procedure<A, undefined>,
    args: A,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    opts: CallOptions = {},
  ): Promise<void> {
    return upload(this.#link, p, args, source, opts);
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
  download<A>(
    p: Procedure<A, undefined>,
    args: A,
    opts: CallOptions & { highWaterMark?: number } = {},
  ): Promise<Readable> {
    return download(this.#link, p, args, opts);
  }
}
