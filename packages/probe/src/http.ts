/**
 * The few bytes of HTTP/1.1 a probe speaks: one request written as a head,
 * and one answer read back from a socket (the head, then a body framed by
 * `Content-Length`, chunked, or the end of the connection), bounded in
 * size, with the moment its first byte arrived. A reader can step aside
 * after a head (a CONNECT's answer), giving back what came after it.
 *
 * @module
 */
import type { Duplex } from 'node:stream';

/** The head of an answer. */
export interface AnswerHead {
  readonly status: number;
  readonly reason: string;
  /** Field names in lowercase; repeated fields joined with `, `. */
  readonly headers: ReadonlyMap<string, string>;
}

/** A step's failure, with what went wrong in words (a probe step's message as it is). */
export class StepFailure extends Error {
  /** Always `'StepFailure'`. */
  override get name(): string {
    return 'StepFailure';
  }
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** Writes a request head (and nothing else). `target` is the request target as sent. */
export function requestHead(
  method: string,
  target: string,
  headers: ReadonlyArray<readonly [string, string]>,
): string {
  return `${method} ${target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

/** Reads one answer from a socket, up to `maxBytes` of head and body. */
function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

export class AnswerReader {
  readonly #socket: Duplex;
  readonly #maxBytes: number;
  readonly #who: string;
  #buf: Buffer = Buffer.alloc(0);
  #taken = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  /** `performance.now()` when the first byte arrived. */
  firstByteAt: number | undefined;

  readonly #onData = (chunk: Buffer) => {
    this.firstByteAt ??= performance.now();
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    this.#kick();
  };
  readonly #onEnd = () => {
    this.#ended = true;
    this.#kick();
  };
  readonly #onError = (err: Error) => {
    this.#error = err;
    this.#kick();
  };

  /** `who` names the peer in messages (`the proxy`, `the target`). */
  constructor(socket: Duplex, maxBytes: number, who: string) {
    this.#socket = socket;
    this.#maxBytes = maxBytes;
    this.#who = who;
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onEnd);
    socket.on('error', this.#onError);
  }

  #kick(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Waits for more bytes; rejects when the connection ended or failed first. */
  async #more(what: string): Promise<void> {
    // A peer that closes with our request still unread in its buffer sends a reset, not an end:
    // before the first byte the two are the same refusal, so they read the same.
    if (this.#error !== undefined && !(this.#silent() && isReset(this.#error))) {
      throw new StepFailure(`${this.#who} connection failed ${what}: ${this.#error.message}`);
    }
    if (this.#ended || this.#error !== undefined) {
      throw new StepFailure(`${this.#who} closed the connection ${what}`);
    }
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Whether nothing at all has arrived yet. */
  #silent(): boolean {
    return this.#taken + this.#buf.length === 0;
  }

  #take(n: number): Buffer {
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    this.#taken += n;
    if (this.#taken > this.#maxBytes) {
      throw new StepFailure(`${this.#who} answered more than ${this.#maxBytes} bytes`);
    }
    return out;
  }

  /** Reads an answer's head (a `1xx` answer is read past). */
  async head(): Promise<AnswerHead> {
    for (;;) {
      let end = this.#buf.indexOf(CRLF2);
      while (end < 0) {
        if (this.#taken + this.#buf.length > this.#maxBytes) {
          throw new StepFailure(`${this.#who} sent a head of more than ${this.#maxBytes} bytes`);
        }
        await this.#more(
          this.#silent()
            ? 'without answering (a proxy closes at once a client whose source it does not allow)'
            : "before the answer's head ended",
        );
        end = this.#buf.indexOf(CRLF2);
      }
      const text = this.#take(end + 4).toString('latin1');
      const [line = '', ...fields] = text.slice(0, -4).split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(line);
      if (m === null) {
        throw new StepFailure(`${this.#who} answered something that is not HTTP/1.1`);
      }
      const status = Number(m[1]);
      const headers = new Map<string, string>();
      for (const f of fields) {
        const i = f.indexOf(':');
        if (i <= 0) continue;
        const k = f.slice(0, i).trim().toLowerCase();
        const v = f.slice(i + 1).trim();
        headers.set(k, headers.has(k) ? `${headers.get(k)}, ${v}` : v);
      }
      if (status >= 100 && status < 200) continue;
      return { status, reason: m[2] ?? '', headers };
    }
  }

  /** Reads the body of the answer whose head `head` is, as its framing says. */
  async body(head: AnswerHead, method: string): Promise<Buffer> {
    if (method === 'HEAD' || head.status === 204 || head.status === 304) return Buffer.alloc(0);
    const what = "before the answer's body ended";
    if (/(^|,)\s*chunked\s*$/i.test(head.headers.get('transfer-encoding') ?? '')) {
      const parts: Buffer[] = [];
      for (;;) {
        let eol = this.#buf.indexOf('\r\n');
        while (eol < 0) {
          await this.#more(what);
          eol = this.#buf.indexOf('\r\n');
        }
        const size = Number.parseInt(this.#take(eol + 2).toString('latin1'), 16);
        if (!Number.isInteger(size) || size < 0) {
          throw new StepFailure(`${this.#who} sent a malformed chunked body`);
        }
        if (size === 0) {
          // The trailer section, up to its empty line.
          for (;;) {
            let e = this.#buf.indexOf('\r\n');
            while (e < 0) {
              await this.#more(what);
              e = this.#buf.indexOf('\r\n');
            }
            if (this.#take(e + 2).length === 2) return Buffer.concat(parts);
          }
        }
        while (this.#buf.length < size + 2) await this.#more(what);
        parts.push(Buffer.from(this.#take(size)));
        this.#take(2);
      }
    }
    const length = head.headers.get('content-length');
    if (length !== undefined) {
      const n = Number(length);
      if (!Number.isInteger(n) || n < 0) {
        throw new StepFailure(`${this.#who} sent a malformed Content-Length`);
      }
      if (n > this.#maxBytes) {
        throw new StepFailure(`${this.#who} answered more than ${this.#maxBytes} bytes`);
      }
      while (this.#buf.length < n) await this.#more(what);
      return Buffer.from(this.#take(n));
    }
    // Delimited by the end of the connection.
    for (;;) {
      if (this.#taken + this.#buf.length > this.#maxBytes) {
        throw new StepFailure(`${this.#who} answered more than ${this.#maxBytes} bytes`);
      }
      if (this.#ended || this.#error !== undefined)
        return Buffer.from(this.#take(this.#buf.length));
      await this.#more(what).catch(() => {});
    }
  }

  /** Stops reading (the socket is paused) and gives back the bytes read past the last head. */
  release(): Buffer {
    this.#socket.off('data', this.#onData);
    this.#socket.off('end', this.#onEnd);
    this.#socket.off('close', this.#onEnd);
    this.#socket.off('error', this.#onError);
    this.#socket.pause();
    const rest = this.#buf;
    this.#buf = Buffer.alloc(0);
    return rest;
  }
}
