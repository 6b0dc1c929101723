// An in-process libvirt peer at the wire level: it reads framed packets from
// one end of a Duplex pair and lets a test script the replies byte by byte.
import { type Duplex, duplexPair } from 'node:stream';
import {
  decodeHeader,
  encodePacket,
  type Header,
  MessageStatus,
  MessageType,
  REMOTE_PROGRAM,
  RpcConnection,
  type RpcConnectionOptions,
  remoteErrorCodec,
  xdr,
} from '../../src/index.js';

export interface Packet {
  header: Header;
  payload: Buffer;
}

export class FakeServer {
  readonly wire: Duplex;
  private buf = Buffer.alloc(0);
  private queue: Packet[] = [];
  private waiters: ((p: Packet) => void)[] = [];
  readonly received: Packet[] = [];
  /** The chunks the client wrote, one per write on its side. */
  readonly writes: Buffer[] = [];

  constructor(wire: Duplex) {
    this.wire = wire;
    wire.on('data', (chunk: Buffer) => {
      this.writes.push(chunk);
      this.buf = Buffer.concat([this.buf, chunk]);
      while (this.buf.length >= 4) {
        const len = this.buf.readUInt32BE(0);
        if (this.buf.length < len) break;
        const pkt = this.buf.subarray(0, len);
        this.buf = this.buf.subarray(len);
        const p = { header: decodeHeader(pkt), payload: Buffer.from(pkt.subarray(28)) };
        this.received.push(p);
        const w = this.waiters.shift();
        if (w) w(p);
        else this.queue.push(p);
      }
    });
    wire.on('error', () => {});
  }

  /** The next packet the client sent. */
  next(): Promise<Packet> {
    const p = this.queue.shift();
    if (p) return Promise.resolve(p);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Sends a reply to `call` with `status` and a raw payload. */
  reply(call: Header, payload?: Uint8Array, status: number = MessageStatus.OK): void {
    this.wire.write(
      encodePacket({ ...call, type: MessageType.REPLY, status }, payload ?? new Uint8Array()),
    );
  }

  /** Sends an error reply with libvirt error `code`. */
  replyError(call: Header, code: number, message: string): void {
    this.reply(call, xdr.encode(remoteErrorCodec, errorBody(code, message)), MessageStatus.ERROR);
  }

  /** Sends a stream packet for `call`. */
  stream(call: Header, status: number, payload?: Uint8Array): void {
    this.wire.write(encodePacket({ ...call, type: MessageType.STREAM, status }, payload));
  }

  /** Sends raw bytes. */
  raw(bytes: Uint8Array): void {
    this.wire.write(bytes);
  }
}

export function errorBody(code: number, message: string) {
  return {
    code,
    domain: 10,
    message,
    level: 2,
    dom: undefined,
    str1: message,
    str2: undefined,
    str3: undefined,
    int1: -1,
    int2: -1,
    net: undefined,
  };
}

/** A connection wired to a fake server. */
export function pair(opts?: RpcConnectionOptions): { conn: RpcConnection; server: FakeServer } {
  const [a, b] = duplexPair();
  return { conn: new RpcConnection(a, opts), server: new FakeServer(b) };
}

export const remoteHeader = (proc: number, serial: number): Header => ({
  prog: REMOTE_PROGRAM,
  vers: 1,
  proc,
  type: MessageType.CALL,
  serial,
  status: MessageStatus.OK,
});
