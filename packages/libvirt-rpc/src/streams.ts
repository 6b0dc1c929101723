/**
 * Stream calls: volume uploads and downloads as stream packets under the
 * call's serial, with backpressure both ways and the finish handshake.
 *
 * @module
 */
import { Readable, type Writable } from 'node:stream';
import { abortError, type CallOptions, remoteError, timeoutError } from './call.js';
import { RpcError } from './errors.js';
import {
  encodeCall,
  encodePacket,
  type Header,
  MessageStatus,
  MessageType,
  type Procedure,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
  STREAM_CHUNK,
} from './protocol.js';

/** Bytes an upload may queue on the transport before it waits for a drain. */
const UPLOAD_BUFFER = 4 * 1024 * 1024;
/** Data at least this long is written after its header without a copy. */
const COPY_MAX = 4096;

/** A stream as the connection sees it: the receiver of its serial's packets. */
export interface StreamEntry {
  /** Tells a stream from a call among the connection's pending serials. */
  readonly kind: 'stream';
  /** A reply under the stream's serial; its payload is `buf[start, end)`. */
  onReply(status: number, buf: Buffer, start: number, end: number): void;
  /** A stream packet under the stream's serial. */
  onStream(status: number, payload: Buffer): void;
  /** The connection closed with `err`. */
  fail(err: Error): void;
}

/** What the streams need of their connection. */
export interface StreamLink {
  /** The transport's writing side, watched for backpressure only. */
  readonly io: Pick<Writable, 'writableLength' | 'on' | 'off'>;
  /** Applies to streams that do not pass their own `timeoutMs`. */
  readonly defaultTimeoutMs: number | undefined;
  /** Takes the next serial. */
  serial(): number;
  /** The error of a call named `name` on a closed connection; undefined while it is open. */
  closedError(name: string): RpcError | undefined;
  /**
   * Writes `head` now, after the calls waiting to be written, with `data`
   * right after it without a copy; nothing once closed. Returns false when
   * the transport's buffer is full.
   */
  write(head: Uint8Array, data?: Uint8Array): boolean;
  /** Routes the packets under `serial` to `entry`. */
  add(serial: number, entry: StreamEntry): void;
  /** Stops routing the packets under `serial`. */
  remove(serial: number): void;
  /**
   * Abandons `entry` as a cancelled call is abandoned: fails it with `err`.
   * True when the connection stays open and drops the stream's late
   * packets, so the server is to be told the stream is aborted.
   */
  abandon(serial: number, entry: StreamEntry, err: Error): boolean;
  /** Pauses reading from the transport (every reply waits meanwhile). */
  pauseReads(): void;
  /** Undoes one {@link StreamLink.pauseReads}; reading resumes when none is left. */
  resumeReads(): void;
}

/** Where a download's data goes. */
interface Sink {
  /** A packet of data, in order. */
  data(payload: Buffer): void;
  /** The end of the server's data. */
  eof(): void;
}

/**
 * One stream call, shared by upload and download. It is its own abort
 * listener (`handleEvent`) and its timer's argument.
 */
class StreamCall implements StreamEntry {
  readonly kind = 'stream';
  /** Resolves once the server accepted the call. */
  readonly accepted: Promise<void>;
  /** Resolves once the stream finished. */
  readonly done: Promise<void>;
  readonly #link: StreamLink;
  readonly #name: string;
  readonly #serial: number;
  readonly #sink: Sink | undefined;
  /** The procedure the stream packets are sent under; 0 before and after the stream. */
  #proc = 0;
  #error: Error | undefined;
  #settled = false;
  #isAccepted = false;
  #finishing = false;
  #eofSeen = false;
  #signal: AbortSignal | undefined;
  #timeoutMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #resolveAccepted!: () => void;
  #rejectAccepted!: (err: Error) => void;
  #resolveDone!: () => void;
  #rejectDone!: (err: Error) => void;
  readonly #wakers = new Set<(err?: Error) => void>();

  constructor(link: StreamLink, name: string, sink: Sink | undefined) {
    this.#link = link;
    this.#name = name;
    this.#serial = link.serial();
    this.#sink = sink;
    this.accepted = new Promise((resolve, reject) => {
      this.#resolveAccepted = resolve;
      this.#rejectAccepted = reject;
    });
    this.done = new Promise((resolve, reject) => {
      this.#resolveDone = resolve;
      this.#rejectDone = reject;
    });
    this.accepted.catch(() => {});
    this.done.catch(() => {});
  }

  /** The error the stream ended with, if any. */
  get error(): Error | undefined {
    return this.#error;
  }

  /** Whether the stream ended. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Whether the server accepted the call. */
  get isAccepted(): boolean {
    return this.#isAccepted;
  }

  /** Sends the call, unless the connection is closed, the signal fired or the arguments do not encode. */
  open<A>(p: Procedure<A, undefined>, args: A, opts: CallOptions): void {
    const closed = this.#link.closedError(this.#name);
    if (closed !== undefined) {
      this.#settle(closed);
      return;
    }
    const { signal } = opts;
    if (signal?.aborted) {
      this.#settle(abortError(signal, this.#name));
      return;
    }
    let bytes: Buffer;
    try {
      bytes = encodeCall(
        header(p.proc, MessageType.CALL, this.#serial, MessageStatus.OK),
        p.args,
        args,
      );
    } catch (err) {
      this.#settle(err as Error);
      return;
    }
    this.#signal = signal;
    signal?.addEventListener('abort', this, { once: true });
    const timeoutMs = opts.timeoutMs ?? this.#link.defaultTimeoutMs;
    if (timeoutMs !== undefined) {
      this.#timeoutMs = timeoutMs;
      this.#timer = setTimeout(StreamCall.#onTimeout, timeoutMs, this);
    }
    this.#link.add(this.#serial, this);
    this.#proc = p.proc;
    this.#link.write(bytes);
  }

  static #onTimeout(s: StreamCall): void {
    s.abort(timeoutError(s.#timeoutMs, s.#name));
  }

  /** The signal's abort event. */
  handleEvent(): void {
    this.abort(abortError(this.#signal!, this.#name));
  }

  /** Stops listening to the signal and the timer. */
  cleanup(): void {
    this.#signal?.removeEventListener('abort', this);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }

  onReply(status: number, buf: Buffer, start: number, end: number): void {
    if (status === MessageStatus.OK && !this.#isAccepted) {
      this.#isAccepted = true;
      this.#resolveAccepted();
      return;
    }
    this.#end();
    this.#settle(
      status === MessageStatus.OK
        ? new RpcError('ERR_RPC_PROTOCOL', `${this.#name}: unexpected reply`)
        : remoteError(this.#name, buf.subarray(start, end)),
    );
  }

  onStream(status: number, payload: Buffer): void {
    const sink = this.#sink;
    if (status === MessageStatus.CONTINUE) {
      if (sink === undefined || this.#eofSeen) return;
      if (payload.length > 0) {
        sink.data(payload);
      } else {
        // An empty data packet is the server's end of data.
        this.#eofSeen = true;
        sink.eof();
      }
      return;
    }
    if (status === MessageStatus.ERROR) {
      this.#end();
      this.#settle(remoteError(this.#name, payload));
      return;
    }
    // OK: the end of the server's data (download) or the finish confirmation.
    if (sink !== undefined && !this.#eofSeen && !this.#finishing) {
      this.#eofSeen = true;
      sink.eof();
      return;
    }
    this.#end();
    this.#settle();
  }

  fail(err: Error): void {
    this.#settle(err);
  }

  /** The stream is over: its packets are no longer routed here. */
  #end(): void {
    this.#link.remove(this.#serial);
    this.#proc = 0;
  }

  /** Sends one stream packet; `data` of 4 KiB or more is not copied. */
  send(status: number, data?: Uint8Array): boolean {
    const h = header(this.#proc, MessageType.STREAM, this.#serial, status);
    if (data === undefined || data.length < COPY_MAX) {
      return this.#link.write(encodePacket(h, data));
    }
    const head = encodePacket(h);
    head.writeUInt32BE(head.length + data.length, 0);
    return this.#link.write(head, data);
  }

  /** Starts the finish handshake: this side's end of the stream. */
  finish(): void {
    this.#finishing = true;
    this.send(MessageStatus.OK);
  }

  #settle(err?: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#error = err;
    if (err === undefined) {
      this.#resolveAccepted();
      this.#resolveDone();
    } else {
      this.#rejectAccepted(err);
      this.#rejectDone(err);
    }
    for (const w of this.#wakers) w(err);
    this.#wakers.clear();
  }

  /** Aborts the stream on the server (when still open) and settles with `err`. */
  abort(err: Error): void {
    if (this.#settled) return;
    if (this.#link.abandon(this.#serial, this, err)) {
      this.send(MessageStatus.ERROR);
      this.#proc = 0;
    }
    this.#settle(err);
  }

  /** Throws the stream's error, or the connection's when it closed. */
  check(): void {
    if (this.#error !== undefined) throw this.#error;
    const closed = this.#link.closedError(this.#name);
    if (closed !== undefined) throw closed;
  }

  /** Resolves when the transport drained; rejects when the stream or the connection ends first. */
  drained(): Promise<void> {
    const io = this.#link.io;
    return new Promise<void>((resolve, reject) => {
      if (this.#error !== undefined) {
        reject(this.#error);
        return;
      }
      const onDrain = () => done();
      const onClose = () => done(this.#link.closedError(this.#name));
      const done = (err?: Error) => {
        io.off('drain', onDrain);
        io.off('close', onClose);
        this.#wakers.delete(done);
        if (err !== undefined) reject(err);
        else resolve();
      };
      io.on('drain', onDrain);
      io.on('close', onClose);
      this.#wakers.add(done);
    });
  }
}

/** A header of the remote program. */
function header(proc: number, type: number, serial: number, status: number): Header {
  return { prog: REMOTE_PROGRAM, vers: REMOTE_PROTOCOL_VERSION, proc, type, serial, status };
}

/** Starts a stream call on `link`; see {@link upload} and {@link download}. */
function openStream<A>(
  link: StreamLink,
  p: Procedure<A, undefined>,
  args: A,
  opts: CallOptions,
  sink?: Sink,
): StreamCall {
  const s = new StreamCall(link, p.name, sink);
  s.open(p, args, opts);
  return s;
}

/**
 * Runs an upload: waits for the server to accept the call, writes `source`
 * as stream packets of at most 256 KiB, waiting for the transport to drain
 * whenever 4 MiB are queued, and ends with the finish handshake.
 */
export async function upload<A>(
  link: StreamLink,
  p: Procedure<A, undefined>,
  args: A,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  opts: CallOptions,
): Promise<void> {
  const s = openStream(link, p, args, opts);
  try {
    await s.accepted;
    for await (const chunk of source) {
      for (let at = 0; at < chunk.length; at += STREAM_CHUNK) {
        s.check();
        s.send(
          MessageStatus.CONTINUE,
          chunk.subarray(at, Math.min(chunk.length, at + STREAM_CHUNK)),
        );
        if (link.io.writableLength >= UPLOAD_BUFFER) await s.drained();
      }
    }
    s.check();
    s.finish();
    await s.done;
  } catch (err) {
    s.abort(err as Error);
    throw s.error ?? err;
  } finally {
    s.cleanup();
  }
}

/**
 * Runs a download: resolves, once the server accepted the call, with a
 * Readable of the data, pausing the transport while the Readable's buffer
 * is full.
 */
export async function download<A>(
  link: StreamLink,
  p: Procedure<A, undefined>,
  args: A,
  opts: CallOptions & { highWaterMark?: number },
): Promise<Readable> {
  let paused = false;
  const resume = () => {
    if (!paused) return;
    paused = false;
    link.resumeReads();
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
  const s = openStream(link, p, args, opts, {
    data: (payload) => {
      if (!out.push(payload) && !paused) {
        paused = true;
        link.pauseReads();
      }
    },
    eof: () => s.finish(),
  });
  s.done.then(
    () => {
      s.cleanup();
      out.push(null);
    },
    (err: Error) => {
      s.cleanup();
      // Before the call was accepted the caller gets the error from this
      // function instead, and the Readable is never handed out.
      if (s.isAccepted) out.destroy(err);
    },
  );
  await s.accepted;
  return out;
}
