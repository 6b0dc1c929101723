/**
 * The proxy's access log: one JSON line per request, appended to a file.
 * As Squid's buffered `stdio:` log, lines are gathered and written together,
 * so a busy proxy spends no write on each request: a line after a quiet
 * spell is written at the end of the event-loop turn, the lines that follow
 * it at most {@link FLUSH_MS} ms later (at once when {@link FLUSH_BYTES}
 * have gathered), and everything on close. A backlog the disk cannot keep
 * up with is bounded, and what is dropped is counted and said on close.
 *
 * @module
 */
import { createWriteStream } from 'node:fs';

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
  /** The request target: an absolute URL, or `host:port` for a tunnel. */
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

/** Largest access-log backlog kept in memory; lines beyond it are dropped and counted. */
const LOG_BACKLOG_BYTES = 1 << 20;
/** Writes of gathered lines are at least this far apart, in ms. */
export const FLUSH_MS = 100;
/** Gathered lines are written at once when they reach this size. */
export const FLUSH_BYTES = 64 * 1024;

/** Opens `path` for appending. */
export function openAccessLog(path: string): AccessLog {
  const stream = createWriteStream(path, { flags: 'a' });
  const ready = new Promise<void>((resolve) => {
    stream.once('open', () => resolve());
    stream.once('error', () => resolve());
  });
  let dropped = 0;
  let pending = '';
  let scheduled = false;
  let timer: NodeJS.Timeout | undefined;
  let lastFlush = Number.NEGATIVE_INFINITY;
  stream.on('error', () => {
    dropped++;
  });
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    scheduled = false;
    lastFlush = performance.now();
    if (pending === '') return;
    const text = pending;
    pending = '';
    if (!stream.destroyed && !stream.writableEnded) stream.write(text);
  };
  return {
    ready,
    write(e) {
      if (stream.destroyed || stream.writableEnded) return;
      if (stream.writableLength + pending.length > LOG_BACKLOG_BYTES) {
        dropped++;
        return;
      }
      pending += `${JSON.stringify(e)}\n`;
      if (pending.length >= FLUSH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        const wait = lastFlush + FLUSH_MS - performance.now();
        if (wait <= 0) setImmediate(flush);
        else {
          timer = setTimeout(flush, wait);
          timer.unref();
        }
      }
    },
    close: () =>
      new Promise<void>((r) => {
        flush();
        if (dropped > 0 && !stream.destroyed) {
          stream.write(`${JSON.stringify({ time: new Date().toISOString(), dropped })}\n`);
        }
        stream.end(() => r());
      }),
  };
}
