/**
 * The protobuf wire format, read side: varints, tags, length-delimited
 * payloads, and skipping a field of any wire type (groups included). Each
 * check fails with the error text of the Go code the real API server's
 * types are generated with (`unexpected EOF`, `proto: integer overflow`,
 * `proto: negative length found during unmarshaling`, ...), so a
 * malformed body is refused in the real server's words.
 *
 * @module
 */

/** The wire types of protobuf: how a field's value is laid out after its tag. */
export const WireType = {
  /** A base-128 varint (int32, int64, uint*, bool, enum). */
  Varint: 0,
  /** Eight little-endian bytes (fixed64, sfixed64, double). */
  Fixed64: 1,
  /** A varint length, then that many bytes (string, bytes, messages, packed repeated). */
  LengthDelimited: 2,
  /** The start of a group (deprecated), ended by a matching {@link WireType.EndGroup}. */
  StartGroup: 3,
  /** The end of a group. */
  EndGroup: 4,
  /** Four little-endian bytes (fixed32, sfixed32, float). */
  Fixed32: 5,
} as const;

/** Thrown when bytes do not read as protobuf; the message is the generated Go code's. */
export class WireError extends Error {
  override readonly name = 'WireError';
  /** A stable code for this class of error. */
  readonly code = 'ERR_PROTOBUF_WIRE';
}

/** Go's `io.ErrUnexpectedEOF`: a value runs past the end of its message. */
export const UNEXPECTED_EOF = 'unexpected EOF';
/** A varint longer than ten bytes. */
export const INTEGER_OVERFLOW = 'proto: integer overflow';
/** A length that is negative as a Go `int`, or that overflows one when added to the offset. */
export const NEGATIVE_LENGTH = 'proto: negative length found during unmarshaling';

const UINT64 = (1n << 64n) - 1n;
const INT64_LIMIT = 1n << 63n;

/** One field's tag: its number and wire type. */
export interface Tag {
  readonly field: number;
  readonly wireType: number;
}

/**
 * Reads one message's bytes front to back. The reader never looks past
 * `end`: a value that would is an {@link UNEXPECTED_EOF}.
 */
export class WireReader {
  readonly #buf: Uint8Array;
  readonly #end: number;
  #pos: number;

  /** Reads `buf` from `start` to `end` (the whole buffer by default). */
  constructor(buf: Uint8Array, start = 0, end = buf.length) {
    this.#buf = buf;
    this.#pos = start;
    this.#end = end;
  }

  /** The offset of the next byte to read. */
  get offset(): number {
    return this.#pos;
  }

  /** Whether every byte of the message was read. */
  get done(): boolean {
    return this.#pos >= this.#end;
  }

  /**
   * A varint as an unsigned 64-bit value; bits past the 64th are dropped
   * and an eleventh byte is {@link INTEGER_OVERFLOW}, as Go reads it.
   */
  varint(): bigint {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (shift >= 64n) throw new WireError(INTEGER_OVERFLOW);
      if (this.#pos >= this.#end) throw new WireError(UNEXPECTED_EOF);
      const b = this.#buf[this.#pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v & UINT64;
    }
  }

  /**
   * The next field's tag. `message` names the message in the errors the
   * Go code gives for an end-group tag outside a group and for a field
   * number of 0 or less.
   */
  tag(message: string): Tag {
    const wire = this.varint();
    const wireType = Number(wire & 7n);
    const field = Number(BigInt.asIntN(32, wire >> 3n));
    if (wireType === WireType.EndGroup)
      throw new WireError(`proto: ${message}: wiretype end group for non-group`);
    if (field <= 0)
      throw new WireError(`proto: ${message}: illegal tag ${field} (wire type ${wire})`);
    return { field, wireType };
  }

  /** A length-delimited payload (a view into the buffer, not a copy). */
  bytes(): Uint8Array {
    const length = BigInt.asIntN(64, this.varint());
    if (length < 0n) throw new WireError(NEGATIVE_LENGTH);
    const stop = BigInt(this.#pos) + length;
    if (stop >= INT64_LIMIT) throw new WireError(NEGATIVE_LENGTH);
    if (stop > BigInt(this.#end)) throw new WireError(UNEXPECTED_EOF);
    const start = this.#pos;
    this.#pos = Number(stop);
    return this.#buf.subarray(start, this.#pos);
  }

  /**
   * Skips the value of a field whose tag was just read, as the Go code
   * skips an unknown field: a group is skipped to its matching end, and a
   * value past the end of the message is {@link UNEXPECTED_EOF}.
   */
  skip(wireType: number): void {
    let depth = wireType === WireType.StartGroup ? 1 : 0;
    let type = wireType;
    for (;;) {
      switch (type) {
        case WireType.Varint:
          this.varint();
          break;
        case WireType.Fixed64:
          this.#advance(8);
          break;
        case WireType.LengthDelimited:
          this.bytes();
          break;
        case WireType.StartGroup:
          break;
        case WireType.EndGroup:
          depth--;
          break;
        case WireType.Fixed32:
          this.#advance(4);
          break;
        default:
          throw new WireError(`proto: illegal wireType ${type}`);
      }
      if (depth === 0) return;
      // Inside a group: the next field's tag, whatever its number.
      type = Number(this.varint() & 7n);
      if (type === WireType.StartGroup) depth++;
    }
  }

  #advance(n: number): void {
    if (this.#pos + n > this.#end) throw new WireError(UNEXPECTED_EOF);
    this.#pos += n;
  }
}
