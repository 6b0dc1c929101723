/**
 * One call awaiting its reply, and the errors a call ends with (cancelled,
 * timed out, refused by the server); shared by the connection's calls and
 * its streams.
 *
 * @module
 */
import { LibvirtError, RpcError } from './errors.js';
import { MessageStatus, remoteErrorCodec } from './protocol.js';
import { type Codec, decode } from './xdr.js';

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call: it rejects at once with an `ERR_RPC_ABORTED` {@link RpcError}. */
  signal?: AbortSignal | undefined;
  /** Gives up after this many milliseconds with an `ERR_RPC_TIMEOUT` {@link RpcError}. */
  timeoutMs?: number | undefined;
}

/** The error of a call named `name` cancelled by `signal`. */
export function abortError(signal: AbortSignal, name: string): RpcError {
  return new RpcError('ERR_RPC_ABORTED', `${name}: aborted`, { cause: signal.reason });
}

/** The error of a call named `name` that got no reply within `ms`. */
export function timeoutError(ms: number, name: string): RpcError {
  return new RpcError('ERR_RPC_TIMEOUT', `${name}: no reply within ${ms} ms`);
}

/** The error the server reported for the call named `name`, decoded from its payload. */
export function remoteError(name: string, payload: Buffer): Error {
  try {
    return new LibvirtError(decode(remoteErrorCodec, payload), name);
  } catch (err) {
    return new RpcError('ERR_RPC_PROTOCOL', `${name}: bad error reply`, { cause: err });
  }
}

/**
 * One call awaiting its reply. It is its own abort listener (`handleEvent`)
 * and its timer's argument, so a call costs one object and one promise.
 */
export class PendingCall {
  /** Tells a call from a stream among the connection's pending serials. */
  readonly kind = 'call';
  /** Whether the call still waits in the write batch (not yet handed to the transport). */
  queued = false;
  /** Where its bytes start in the write batch. */
  start = 0;
  /** Where its bytes end in the write batch. */
  end = 0;
  /** Settles with the decoded reply, or rejects with the call's error. */
  readonly promise: Promise<unknown>;
  readonly #name: string;
  readonly #ret: Codec<unknown>;
  readonly #signal: AbortSignal | undefined;
  readonly #timeoutMs: number;
  readonly #abandon: (c: PendingCall, err: Error) => void;
  #timer: NodeJS.Timeout | undefined;
  #resolve!: (v: unknown) => void;
  #reject!: (err: Error) => void;

  /**
   * Listens to `signal` and starts the timeout, if any. On either, the call
   * goes to `abandon`, which every call of a connection shares.
   */
  constructor(
    name: string,
    readonly serial: number,
    ret: Codec<unknown>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    abandon: (c: PendingCall, err: Error) => void,
  ) {
    this.#name = name;
    this.#ret = ret;
    this.#signal = signal;
    this.#timeoutMs = timeoutMs ?? 0;
    this.#abandon = abandon;
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    signal?.addEventListener('abort', this, { once: true });
    if (timeoutMs !== undefined) this.#timer = setTimeout(PendingCall.#onTimeout, timeoutMs, this);
  }

  /** Shared by every call: the timer gets its call as the argument, so no closure per call. */
  static #onTimeout(c: PendingCall): void {
    c.#timer = undefined;
    c.#abandon(c, timeoutError(c.#timeoutMs, c.#name));
  }

  /** The signal's abort event. */
  handleEvent(): void {
    this.#abandon(this, abortError(this.#signal!, this.#name));
  }

  #cleanup(): void {
    this.#signal?.removeEventListener('abort', this);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }

  /** Settles the call with its reply, whose payload is `buf[start, end)`. */
  onReply(status: number, buf: Buffer, start: number, end: number): void {
    this.#cleanup();
    if (status !== MessageStatus.OK) {
      this.#reject(remoteError(this.#name, buf.subarray(start, end)));
      return;
    }
    let v: unknown;
    try {
      v = decode(this.#ret, buf, start, end);
    } catch (err) {
      this.#reject(
        new RpcError('ERR_RPC_PROTOCOL', `${this.#name}: bad reply: ${(err as Error).message}`, {
          cause: err,
        }),
      );
      return;
    }
    this.#resolve(v);
  }

  /** Fails the call with `err`. */
  fail(err: Error): void {
    this.#cleanup();
    this.#reject(err);
  }
}
