/**
 * XDR (RFC 4506) primitives and combinators: every type is a {@link Codec}
 * with `write`, `read` and a validity check `valid`. {@link decode} rejects
 * leftover bytes, so a reply that does not match its declared type fails
 * instead of being half-read.
 *
 * @module
 */

/** Thrown when bytes do not decode as the expected XDR type, or a value cannot be encoded. */
export class XdrError extends Error {
  /** Always `XdrError`. */
  override readonly name = 'XdrError';
  /** A stable code for this class of error. */
  readonly code = 'ERR_XDR';
}

/** A growable big-endian buffer that XDR values are written into. */
export class XdrWriter {
  private buf: Buffer;
  private pos = 0;

  /** Starts with `initial` bytes of room; it grows as needed. */
  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Writes a signed 32-bit integer. */
  int32(v: number): void {
    this.room(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
  }

  /** Writes an unsigned 32-bit integer. */
  uint32(v: number): void {
    this.room(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
  }

  /** Writes a signed 64-bit integer. */
  int64(v: bigint): void {
    this.room(8);
    this.buf.writeBigInt64BE(v, this.pos);
    this.pos += 8;
  }

  /** Writes an unsigned 64-bit integer. */
  uint64(v: bigint): void {
    this.room(8);
    this.buf.writeBigUInt64BE(v, this.pos);
    this.pos += 8;
  }

  /** Writes bytes followed by zero padding to a multiple of four. */
  bytes(b: Uint8Array): void {
    const pad = (4 - (b.length % 4)) % 4;
    this.room(b.length + pad);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    this.buf.fill(0, this.pos, this.pos + pad);
    this.pos += pad;
  }

  /** Drops what was written after `length` bytes (to undo a value that failed to encode). */
  truncate(length: number): void {
    if (length < this.pos) this.pos = length;
  }

  /** Overwrites a 32-bit unsigned integer already written at `offset`. */
  patchUint32(offset: number, v: number): void {
    this.buf.writeUInt32BE(v, offset);
  }

  /** The bytes written so far (a view, not a copy). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** Reads XDR values from a byte array, checking bounds and padding. */
export class XdrReader {
  private pos: number;
  private readonly end: number;

  private readonly data: Uint8Array;

  /** Reads `data` from `offset` up to `end` (the end of `data` by default). */
  constructor(data: Uint8Array, offset = 0, end = data.length) {
    this.data = data;
    this.pos = offset;
    this.end = end;
  }

  /** The read position. */
  get offset(): number {
    return this.pos;
  }

  /** Bytes left to read. */
  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number): void {
    if (this.pos + n > this.end) {
      throw new XdrError(`XDR: need ${n} bytes at offset ${this.pos}, have ${this.remaining}`);
    }
  }

  /** Reads a signed 32-bit integer. */
  int32(): number {
    this.need(4);
    const d = this.data;
    const p = this.pos;
    this.pos = p + 4;
    return (d[p]! << 24) | (d[p + 1]! << 16) | (d[p + 2]! << 8) | d[p + 3]!;
  }

  /** Reads an unsigned 32-bit integer. */
  uint32(): number {
    return this.int32() >>> 0;
  }

  /** Reads a signed 64-bit integer. */
  int64(): bigint {
    return BigInt.asIntN(64, this.uint64());
  }

  /** Reads an unsigned 64-bit integer. */
  uint64(): bigint {
    this.need(8);
    const hi = this.uint32();
    return (BigInt(hi) << 32n) | BigInt(this.uint32());
  }

  /** Reads `n` bytes and their padding; the padding must be zero. */
  bytes(n: number): Uint8Array {
    const pad = (4 - (n % 4)) % 4;
    this.need(n + pad);
    const out = this.data.subarray(this.pos, this.pos + n);
    for (let i = 0; i < pad; i++) {
      if (this.data[this.pos + n + i] !== 0) {
        throw new XdrError(`XDR: non-zero padding at offset ${this.pos + n + i}`);
      }
    }
    this.pos += n + pad;
    return out;
  }
}

/** One XDR type: how to write it, read it, and tell whether a value is one. */
export interface Codec<T> {
  /** A short description, for error messages. */
  readonly name: string;
  /** Writes `v`; throws {@link XdrError} when `v` is not valid. */
  write(w: XdrWriter, v: T): void;
  /** Reads one value; throws {@link XdrError} on malformed bytes. */
  read(r: XdrReader): T;
  /** Whether `v` can be written as this type. */
  valid(v: unknown): v is T;
}

function checked<T>(c: Omit<Codec<T>, 'write'> & { put(w: XdrWriter, v: T): void }): Codec<T> {
  return {
    name: c.name,
    read: c.read,
    valid: c.valid,
    write(w, v) {
      if (!c.valid(v)) throw new XdrError(`XDR: not a valid ${c.name}: ${describe(v)}`);
      c.put(w, v);
    },
  };
}

function describe(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (typeof v === 'string') return v.length > 40 ? `string of ${v.length}` : JSON.stringify(v);
  return String(v);
}

const I32_MIN = -0x8000_0000;
const I32_MAX = 0x7fff_ffff;
const U32_MAX = 0xffff_ffff;

/** XDR `void`: no bytes. */
export const xvoid: Codec<undefined> = checked({
  name: 'void',
  put() {},
  read: () => undefined,
  valid: (v): v is undefined => v === undefined,
});

/** XDR `int`: a signed 32-bit integer. */
export const int: Codec<number> = checked({
  name: 'int',
  put: (w, v) => w.int32(v),
  read: (r) => r.int32(),
  valid: (v): v is number =>
    Number.isInteger(v) && (v as number) >= I32_MIN && (v as number) <= I32_MAX,
});

/** XDR `unsigned int`: an unsigned 32-bit integer. */
export const uint: Codec<number> = checked({
  name: 'unsigned int',
  put: (w, v) => w.uint32(v),
  read: (r) => r.uint32(),
  valid: (v): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= U32_MAX,
});

/** XDR `bool`: 0 or 1 on the wire; any other value is rejected. */
export const bool: Codec<boolean> = checked({
  name: 'bool',
  put: (w, v) => w.int32(v ? 1 : 0),
  read: (r) => {
    const v = r.int32();
    if (v !== 0 && v !== 1) throw new XdrError(`XDR: bool must be 0 or 1, got ${v}`);
    return v === 1;
  },
  valid: (v): v is boolean => typeof v === 'boolean',
});

/** XDR `hyper`: a signed 64-bit integer, as a `bigint`. */
export const hyper: Codec<bigint> = checked({
  name: 'hyper',
  put: (w, v) => w.int64(v),
  read: (r) => r.int64(),
  valid: (v): v is bigint => typeof v === 'bigint' && v >= -(1n << 63n) && v < 1n << 63n,
});

/** XDR `unsigned hyper`: an unsigned 64-bit integer, as a `bigint`. */
export const uhyper: Codec<bigint> = checked({
  name: 'unsigned hyper',
  put: (w, v) => w.uint64(v),
  read: (r) => r.uint64(),
  valid: (v): v is bigint => typeof v === 'bigint' && v >= 0n && v < 1n << 64n,
});

/**
 * XDR `unsigned hyper` as a `number`: sizes and versions. Reading a value
 * above `Number.MAX_SAFE_INTEGER` throws rather than losing precision.
 */
export const uhyperNumber: Codec<number> = checked({
  name: 'unsigned hyper (safe integer)',
  put: (w, v) => w.uint64(BigInt(v)),
  read: (r) => {
    const v = r.uint64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new XdrError(`XDR: unsigned hyper ${v} is above Number.MAX_SAFE_INTEGER`);
    }
    return Number(v);
  },
  valid: (v): v is number => Number.isSafeInteger(v) && (v as number) >= 0,
});

/** XDR `opaque<max>`: variable-length bytes, at most `max`. */
export function opaque(max = U32_MAX): Codec<Uint8Array> {
  return checked({
    name: `opaque<${max}>`,
    put: (w, v) => {
      w.uint32(v.length);
      w.bytes(v);
    },
    read: (r) => {
      const n = r.uint32();
      if (n > max) throw new XdrError(`XDR: opaque length ${n} exceeds ${max}`);
      return r.bytes(n);
    },
    valid: (v): v is Uint8Array => v instanceof Uint8Array && v.length <= max,
  });
}

/** XDR `opaque[n]`: exactly `n` bytes. */
export function fixedOpaque(n: number): Codec<Uint8Array> {
  return checked({
    name: `opaque[${n}]`,
    put: (w, v) => w.bytes(v),
    read: (r) => r.bytes(n),
    valid: (v): v is Uint8Array => v instanceof Uint8Array && v.length === n,
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** XDR `string<max>`: UTF-8 text of at most `max` bytes. */
export function string(max = U32_MAX): Codec<string> {
  return checked({
    name: `string<${max}>`,
    put: (w, v) => {
      const b = Buffer.from(v, 'utf8');
      if (b.length > max) throw new XdrError(`XDR: string of ${b.length} bytes exceeds ${max}`);
      w.uint32(b.length);
      w.bytes(b);
    },
    read: (r) => {
      const n = r.uint32();
      if (n > max) throw new XdrError(`XDR: string length ${n} exceeds ${max}`);
      try {
        return utf8.decode(r.bytes(n));
      } catch (err) {
        if (err instanceof XdrError) throw err;
        throw new XdrError('XDR: string is not valid UTF-8');
      }
    },
    valid: (v): v is string => typeof v === 'string' && v.length <= max,
  });
}

/** XDR optional data (`T *`): a 0/1 flag, then the value when 1. `undefined` means absent. */
export function optional<T>(c: Codec<T>): Codec<T | undefined> {
  return checked({
    name: `${c.name} *`,
    put: (w, v) => {
      if (v === undefined) {
        w.uint32(0);
      } else {
        w.uint32(1);
        c.write(w, v);
      }
    },
    read: (r) => {
      const flag = r.uint32();
      if (flag === 0) return undefined;
      if (flag !== 1) throw new XdrError(`XDR: optional flag must be 0 or 1, got ${flag}`);
      return c.read(r);
    },
    valid: (v): v is T | undefined => v === undefined || c.valid(v),
  });
}

/** XDR variable-length array `T<max>`. */
export function array<T>(c: Codec<T>, max = U32_MAX): Codec<T[]> {
  return checked({
    name: `${c.name}<${max}>`,
    put: (w, v) => {
      w.uint32(v.length);
      for (const item of v) c.write(w, item);
    },
    read: (r) => {
      const n = r.uint32();
      if (n > max) throw new XdrError(`XDR: array length ${n} exceeds ${max}`);
      // Every element takes at least 4 bytes on the wire, except void.
      if (n > r.remaining) throw new XdrError(`XDR: array length ${n} exceeds the bytes left`);
      const out: T[] = [];
      for (let i = 0; i < n; i++) out.push(c.read(r));
      return out;
    },
    valid: (v): v is T[] => Array.isArray(v) && v.length <= max && v.every((x) => c.valid(x)),
  });
}

/** The codecs of a struct's fields, in wire order. */
export type Fields<T> = { readonly [K in keyof T]: Codec<T[K]> };

/** XDR struct: fields written in the order `order` lists them. */
export function struct<T extends object>(
  name: string,
  fields: Fields<T>,
  order: readonly (keyof T)[],
): Codec<T> {
  return {
    name,
    write(w, v) {
      if (typeof v !== 'object' || v === null) {
        throw new XdrError(`XDR: not a valid ${name}: ${describe(v)}`);
      }
      for (const k of order) {
        try {
          fields[k].write(w, v[k]);
        } catch (err) {
          if (!(err instanceof XdrError)) throw err;
          throw new XdrError(`${name}.${String(k)}: ${err.message}`);
        }
      }
    },
    read: (r) => {
      const out = {} as T;
      for (const k of order) out[k] = fields[k].read(r);
      return out;
    },
    valid: (v): v is T =>
      typeof v === 'object' &&
      v !== null &&
      order.every((k) => fields[k].valid((v as Record<keyof T, unknown>)[k])),
  };
}

/** Encodes one value. */
export function encode<T>(c: Codec<T>, v: T): Buffer {
  const w = new XdrWriter();
  c.write(w, v);
  return w.finish();
}

/**
 * Decodes one value that must fill `bytes` (from `offset` to `end`, the
 * whole array by default) exactly: leftover bytes are an error.
 */
export function decode<T>(c: Codec<T>, bytes: Uint8Array, offset = 0, end = bytes.length): T {
  const r = new XdrReader(bytes, offset, end);
  const v = c.read(r);
  if (r.remaining !== 0) {
    throw new XdrError(`XDR: ${r.remaining} leftover bytes after ${c.name}`);
  }
  return v;
}
