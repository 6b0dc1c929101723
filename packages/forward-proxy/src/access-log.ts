/**
 * The proxy's access log: one JSON line per request, appended to a file.
 * As Squid's buffered `stdio:` log, lines are gathered and written together,
 * so a busy proxy spends no write on each request: a line after a quiet
 * spell is written at the end of the event-loop turn, the lines that follow
 * it at most {@link FLUSH_MS} ms later (at once when {@link FLUSH_BYTES}
 * have gathered), and everything on close. A backlog the disk cannot keep
 * up with is bounded, and what is dropped is counted and said on close.
 * Lines gather in buffers outside the JS heap, and the file is written with
 * plain `fs` calls, one write at a time, rather than through a write stream,
 * which would load Node.js's stream and `fs/promises` modules into every
 * proxy process for nothing.
 *
 * @module
 */
import { now as clock } from './clock.js';
import { fs } from './fs.js';
import { isoTime } from './http-date.js';
import { targetForLog } from './log-target.js';

const { close: closeFile, open, write: writeFile } = fs;

/** One access-log line. */
export interface AccessLogEntry {
  /** When the request ended, as an ISO 8601 timestamp. */
  readonly time: string;
  /** The client's address. */
  readonly client: string;
  /** The user the request authenticated as, when the proxy requires authentication (never a password). */
  readonly user?: string | undefined;
  /** The request method (`CONNECT` for a tunnel). */
  readonly method: string;
  /**
   * The request target: an absolute URL without user info or query, or
   * `host:port` for a tunnel (at most 200 characters).
   */
  readonly target: string;
  /** The answer's status: the origin's, or the proxy's own for a request it refused. */
  readonly status: number;
  /** Bytes received from the client past the request head (for a tunnel, all it sent). */
  readonly bytesIn: number;
  /** Bytes sent to the client past the answer head (for a tunnel, all it was sent). */
  readonly bytesOut: number;
  /** How long the request took, in ms. */
  readonly durationMs: number;
  /** The parent proxy that carried it, when the proxy is a gateway (its name, never its credential). */
  readonly upstream?: string | undefined;
}

/** An open access log. */
export interface AccessLog {
  /** Resolves once the file is open (or could not be). */
  readonly ready: Promise<void>;
  write(e: AccessLogEntry): void;
  /** Writes what is gathered, notes any dropped lines, and closes the file. */
  close(): Promise<void>;
}

/** A request or tunnel that ended: its line less the time and duration, and when it began (`clock()`). */
export type EndedRequest = Omit<AccessLogEntry, 'time' | 'durationMs'> & {
  readonly started: number;
};

/** Writes the line of a request or tunnel that ended now, when there is a log. */
export function logEnded(log: AccessLog | undefined, e: EndedRequest): void {
  if (log === undefined) return;
  const { started, upstream, ...rest } = e;
  log.write({
    time: isoTime(),
    ...rest,
    durationMs: Math.round(clock() - started),
    ...(upstream === undefined ? {} : { upstream }),
  });
}

/** Largest access-log backlog kept in memory; lines beyond it are dropped and counted. */
const LOG_BACKLOG_BYTES = 1 << 20;
/** Writes of gathered lines are at least this far apart, in ms. */
export const FLUSH_MS = 100;
/** Lines gather in buffers of this size; a full one is written at once. */
export const FLUSH_BYTES = 64 * 1024;
/** Empty buffers kept for the next lines. */
const SPARE_BUFFERS = 2;

/** Opens `path` for appending. */
export function openAccessLog(path: string): AccessLog {
  let fd: number | undefined;
  let closed = false;
  let dropped = 0;
  /** The buffer lines gather in, and how much of it they fill. */
  let gathering: Buffer | undefined;
  let used = 0;
  /** Gathered lines waiting for the write in flight, oldest first. */
  const queued: Buffer[] = [];
  let queuedBytes = 0;
  /** Bytes of the write in flight (0: none). */
  let writing = 0;
  const spare: Buffer[] = [];
  let scheduled = false;
  let timer: NodeJS.Timeout | undefined;
  let lastFlush = Number.NEGATIVE_INFINITY;
  let idle: (() => void) | undefined;
  const lineCount = (b: Buffer) => {
    let n = 0;
    for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) n++;
    return n;
  };
  const next = () => {
    if (fd === undefined || writing > 0) return;
    const buf = queued.shift();
    if (buf === undefined) {
      idle?.();
      return;
    }
    queuedBytes -= buf.length;
    writing = buf.length;
    const file = fd;
    const writeFrom = (offset: number) =>
      writeFile(file, buf, offset, buf.length - offset, null, (err, n) => {
        if (err === null && offset + n < buf.length) return writeFrom(offset + n);
        // A failed write loses its lines; the count is said on close.
        if (err !== null) dropped += lineCount(buf.subarray(offset));
        writing = 0;
        if (buf.buffer.byteLength === FLUSH_BYTES && spare.length < SPARE_BUFFERS) {
          spare.push(Buffer.from(buf.buffer, buf.byteOffset, FLUSH_BYTES));
        }
        next();
      });
    writeFrom(0);
  };
  const ready = new Promise<void>((resolve) => {
    // Never through a link someone planted in its place; readable by its owner only.
    const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW } = fs.constants;
    open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0o600, (err, f) => {
      if (err === null) fd = f;
      else closed = true;
      resolve();
      next();
    });
  });
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    scheduled = false;
    lastFlush = clock();
    if (gathering === undefined || used === 0) return;
    queued.push(gathering.subarray(0, used));
    queuedBytes += used;
    gathering = undefined;
    used = 0;
    next();
  };
  /** Queues `text` on its own (a line longer than a buffer, or the closing note). */
  const queueText = (text: string) => {
    const b = Buffer.from(text, 'utf8');
    queued.push(b);
    queuedBytes += b.length;
  };
  return {
    ready,
    write(e) {
      if (closed) return;
      // The line goes straight into a buffer outside the JS heap, so the lines
      // waiting for their write are not strings the garbage collector moves
      // to its old generation (they made up most of what it collected).
      // One place for every path: the target never carries user info or a query.
      const line = `${JSON.stringify({ ...e, target: targetForLog(e.target) })}\n`;
      const n = Buffer.byteLength(line, 'utf8');
      if (writing + queuedBytes + used + n > LOG_BACKLOG_BYTES) {
        dropped++;
        return;
      }
      if (used + n > FLUSH_BYTES) flush();
      if (n > FLUSH_BYTES) {
        queueText(line);
        next();
        return;
      }
      gathering ??= spare.pop() ?? Buffer.allocUnsafeSlow(FLUSH_BYTES);
      used += gathering.write(line, used, 'utf8');
      if (used === FLUSH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        const wait = lastFlush + FLUSH_MS - clock();
        if (wait <= 0) setImmediate(flush);
        else {
          timer = setTimeout(flush, wait);
          timer.unref();
        }
      }
    },
    async close() {
      await ready;
      if (fd === undefined) return;
      closed = true;
      flush();
      await new Promise<void>((r) => {
        idle = r;
        next();
      });
      if (dropped > 0) {
        queueText(`${JSON.stringify({ time: isoTime(), dropped })}\n`);
        await new Promise<void>((r) => {
          idle = r;
          next();
        });
      }
      const file = fd;
      fd = undefined;
      await new Promise<void>((r) => closeFile(file, () => r()));
    },
  };
}
