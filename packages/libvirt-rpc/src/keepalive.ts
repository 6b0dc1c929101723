/**
 * The keepalive program: answers the peer's pings, and pings a quiet peer
 * itself, declaring it dead after enough silent intervals.
 *
 * @module
 */
import { RpcError } from './errors.js';
import {
  encodePacket,
  KEEPALIVE_PROGRAM,
  KEEPALIVE_PROTOCOL_VERSION,
  KeepaliveProc,
  MessageStatus,
  MessageType,
} from './protocol.js';

/** Keepalive settings: a ping after `intervalMs` of silence; dead after `count` silent intervals. */
export interface KeepaliveOptions {
  /** Milliseconds of silence before a ping. */
  intervalMs: number;
  /** Silent intervals after which the peer is declared dead. */
  count: number;
}

/** What the keepalive needs of its connection. */
export interface KeepaliveLink {
  /** Writes a packet now, after the calls waiting to be written; nothing once closed. */
  write(bytes: Uint8Array): boolean;
  /** Whether reading is paused (a download's backpressure), so the peer cannot be heard. */
  readsPaused(): boolean;
  /** Closes the connection with `err`. */
  fail(err: Error): void;
}

/** The keepalive program of one connection. */
export class Keepalive {
  readonly #link: KeepaliveLink;
  #lastRx = Date.now();
  #timer: NodeJS.Timeout | undefined;

  /** Keepalive over `link`; it only answers pings until {@link Keepalive.start}. */
  constructor(link: KeepaliveLink) {
    this.#link = link;
  }

  /** Notes that the peer was heard from (any read). */
  heard(): void {
    this.#lastRx = Date.now();
  }

  /** Handles a packet of the keepalive program: a ping is answered with a pong. */
  onPacket(proc: number): void {
    if (proc === KeepaliveProc.PING) this.#send(KeepaliveProc.PONG);
  }

  #send(proc: number): void {
    this.#link.write(
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
   * Pings after `intervalMs` without traffic from the peer, and closes the
   * connection with `ERR_RPC_KEEPALIVE` after `count` silent intervals.
   * While reading is paused the check waits.
   */
  start(opts: KeepaliveOptions): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const tick = Math.max(10, Math.floor(opts.intervalMs / 2));
    this.#timer = setInterval(() => {
      if (this.#link.readsPaused()) {
        this.#lastRx = Date.now();
        return;
      }
      const silent = Date.now() - this.#lastRx;
      if (silent >= opts.intervalMs * opts.count) {
        this.#link.fail(
          new RpcError('ERR_RPC_KEEPALIVE', `no answer from the peer for ${silent} ms (keepalive)`),
        );
      } else if (silent >= opts.intervalMs) {
        this.#send(KeepaliveProc.PING);
      }
    }, tick);
    this.#timer.unref();
  }

  /** Stops pinging (pings from the peer are still answered). */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
