/**
 * Message schemas and the decoder that turns a message's bytes into the
 * JSON object the Go type would marshal to: each field's number, wire
 * type and JSON name; `omitempty` dropping zero values unless the Go field
 * is a pointer (then being on the wire means being set); structs that are
 * not pointers written even when absent (`"spec": {}`); `[]byte` as
 * base64; `metav1.Time` as RFC 3339 seconds, or `null` when zero. Unknown
 * fields are skipped, as the generated Go code skips them.
 *
 * @module
 */
import type { JsonObject, JsonValue } from '../json.js';
import { WireError, WireReader, WireType } from './wire.js';

/** How a field's value is encoded, and how it is written in JSON. */
export type FieldType =
  | 'string'
  | 'bytes'
  | 'bool'
  | 'int32'
  | 'int64'
  /** `metav1.Time`: a Timestamp message whose seconds give the time (nanos are dropped, as Go does). */
  | 'time'
  /** `metav1.FieldsV1`: a message whose `Raw` bytes are JSON, written as that JSON. */
  | 'fieldsV1'
  | { readonly message: MessageSchema }
  /** `map<string, string>` or `map<string, bytes>`: entries with the key as field 1, the value as field 2. */
  | { readonly map: 'string' | 'bytes' };

/** One field of a message. */
export interface FieldSchema {
  /** The field number of the upstream `.proto` definition. */
  readonly number: number;
  /** The name in JSON. */
  readonly json: string;
  /** The Go field's name, as the generated code's errors name it. */
  readonly go: string;
  readonly type: FieldType;
  /** A repeated field: a JSON array, left out when empty (`null` when {@link always}). */
  readonly repeated?: boolean;
  /** A Go pointer: written whenever it is on the wire, even when zero. */
  readonly pointer?: boolean;
  /** A JSON tag without `omitempty`: the zero value is written too. */
  readonly always?: boolean;
}

/** A message: its name (for errors) and its fields in the Go struct's order. */
export interface MessageSchema {
  readonly name: string;
  readonly fields: readonly FieldSchema[];
}

/**
 * What a message's bytes decoded to, before JSON: one entry per field seen
 * (a repeated field's values in order, a map's entries, a message's own
 * decoded fields). Repeated occurrences merge as the Go code merges them.
 */
export type Decoded = Map<number, DecodedValue>;

/** One field's decoded value. */
export type DecodedValue =
  | string
  | boolean
  | bigint
  | Uint8Array
  | null
  | Decoded
  | DecodedValue[]
  | Map<string, string | Uint8Array>;

const utf8 = new TextDecoder();

/** The wire type each field type is read with. */
function wireTypeOf(t: FieldType): number {
  return t === 'bool' || t === 'int32' || t === 'int64'
    ? WireType.Varint
    : WireType.LengthDelimited;
}

/**
 * Decodes a message's bytes against its schema (see {@link toJson} for the
 * JSON), merging into `into` when given, as a repeated occurrence of a
 * message field merges into the first. Throws a {@link WireError} with the
 * generated Go code's words for bytes that do not read as the message.
 */
export function decodeMessage(schema: MessageSchema, bytes: Uint8Array, into?: Decoded): Decoded {
  const out = into ?? new Map<number, DecodedValue>();
  const byNumber = fieldIndex(schema);
  const r = new WireReader(bytes);
  while (!r.done) {
    const { field, wireType } = r.tag(schema.name);
    const f = byNumber.get(field);
    if (f === undefined) {
      r.skip(wireType);
      continue;
    }
    if (wireType !== wireTypeOf(f.type))
      throw new WireError(`proto: wrong wireType = ${wireType} for field ${f.go}`);
    const previous = out.get(field);
    const value = readValue(f.type, r, f.repeated === true ? undefined : previous);
    if (f.repeated === true) {
      const list = Array.isArray(previous) ? previous : [];
      list.push(value);
      out.set(field, list);
    } else out.set(field, value);
  }
  return out;
}

const indexes = new WeakMap<MessageSchema, Map<number, FieldSchema>>();

function fieldIndex(schema: MessageSchema): Map<number, FieldSchema> {
  let index = indexes.get(schema);
  if (index === undefined) {
    index = new Map(schema.fields.map((f) => [f.number, f]));
    indexes.set(schema, index);
  }
  return index;
}

function readValue(t: FieldType, r: WireReader, previous: DecodedValue | undefined): DecodedValue {
  switch (t) {
    case 'bool':
      return r.varint() !== 0n;
    case 'int32':
      return BigInt.asIntN(32, r.varint());
    case 'int64':
      return BigInt.asIntN(64, r.varint());
    case 'string':
      return utf8.decode(r.bytes());
    case 'bytes':
      return r.bytes().slice();
    case 'time':
      return readTime(r.bytes());
    case 'fieldsV1': {
      const raw = decodeMessage(FIELDS_V1, r.bytes()).get(1);
      // An empty Raw is Go's nil slice, which marshals as null.
      return raw instanceof Uint8Array && raw.length > 0 ? raw : null;
    }
    default:
      break;
  }
  const bytes = r.bytes();
  if ('message' in t)
    return decodeMessage(
      t.message,
      bytes,
      previous instanceof Map ? (previous as Decoded) : undefined,
    );
  const entries =
    previous instanceof Map ? (previous as Map<string, string | Uint8Array>) : new Map();
  const entry = decodeMessage(t.map === 'string' ? STRING_ENTRY : BYTES_ENTRY, bytes);
  const key = entry.get(1);
  const value = entry.get(2);
  entries.set(
    typeof key === 'string' ? key : '',
    value instanceof Uint8Array || typeof value === 'string'
      ? value
      : t.map === 'string'
        ? ''
        : new Uint8Array(0),
  );
  return entries;
}

/** The `Timestamp` message of `metav1.Time`. */
const TIMESTAMP: MessageSchema = {
  name: 'Timestamp',
  fields: [
    { number: 1, json: 'seconds', go: 'Seconds', type: 'int64' },
    { number: 2, json: 'nanos', go: 'Nanos', type: 'int32' },
  ],
};

/** The `FieldsV1` message: its JSON in `Raw`. */
const FIELDS_V1: MessageSchema = {
  name: 'FieldsV1',
  fields: [{ number: 1, json: 'Raw', go: 'Raw', type: 'bytes' }],
};

/** A map entry: the key as field 1, the value as field 2. */
function mapEntry(value: 'string' | 'bytes'): MessageSchema {
  return {
    name: 'MapEntry',
    fields: [
      { number: 1, json: 'key', go: 'mapkey', type: 'string' },
      { number: 2, json: 'value', go: 'mapvalue', type: value },
    ],
  };
}

const STRING_ENTRY = mapEntry('string');
const BYTES_ENTRY = mapEntry('bytes');

/** An empty payload is the zero time (`null`); otherwise the Timestamp's whole seconds. */
function readTime(bytes: Uint8Array): bigint | null {
  if (bytes.length === 0) return null;
  const ts = decodeMessage(TIMESTAMP, bytes);
  const seconds = ts.get(1);
  return typeof seconds === 'bigint' ? seconds : 0n;
}

/** Seconds of 0001-01-01 and 9999-12-31T23:59:59, the years RFC 3339 can write. */
const FIRST_SECOND = -62135596800n;
const LAST_SECOND = 253402300799n;

/** `metav1.Time`'s JSON: RFC 3339 in UTC to the second, or `null` for the zero time. */
export function timeJson(seconds: bigint | null): string | null {
  // Go's zero time (year 1) is null however it came.
  if (seconds === null || seconds === FIRST_SECOND) return null;
  if (seconds < FIRST_SECOND || seconds > LAST_SECOND)
    throw new WireError(`time ${seconds}s since the epoch is outside years 1 to 9999`);
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}Z`;
}

/**
 * The JSON object a decoded message marshals to, as Go's `encoding/json`
 * writes the struct: fields in the struct's order, `omitempty` honoured.
 */
export function toJson(schema: MessageSchema, d: Decoded): JsonObject {
  const out: JsonObject = {};
  for (const f of schema.fields) {
    const v = d.get(f.number);
    const present = v !== undefined;
    if (f.repeated === true) {
      const list = Array.isArray(v) ? v : [];
      // An empty list is Go's nil slice: left out, or null without omitempty.
      if (list.length > 0) out[f.json] = list.map((x) => scalarJson(f.type, x));
      else if (f.always === true) out[f.json] = null;
      continue;
    }
    if (typeof f.type === 'object' && 'map' in f.type) {
      const entries = v instanceof Map ? (v as Map<string, string | Uint8Array>) : new Map();
      if (entries.size === 0) continue;
      const m: JsonObject = {};
      // Defined, not assigned: a key such as `__proto__` stays a key, as in JSON.parse.
      for (const [k, x] of entries)
        Object.defineProperty(m, k, {
          value: typeof x === 'string' ? x : base64(x),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      out[f.json] = m;
      continue;
    }
    if (f.pointer === true) {
      if (present) out[f.json] = scalarJson(f.type, v);
      continue;
    }
    // Structs are written even when absent: omitempty does not apply to them.
    if (f.type === 'time' || (typeof f.type === 'object' && 'message' in f.type)) {
      out[f.json] = scalarJson(f.type, present ? v : zeroOf(f.type));
      continue;
    }
    const j = scalarJson(f.type, present ? v : zeroOf(f.type));
    if (f.always === true || !isZero(j)) out[f.json] = j;
  }
  return out;
}

function zeroOf(t: FieldType): DecodedValue {
  switch (t) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'int32':
    case 'int64':
      return 0n;
    case 'bytes':
      return new Uint8Array(0);
    case 'time':
    case 'fieldsV1':
      return null;
    default:
      return new Map();
  }
}

function isZero(j: JsonValue): boolean {
  return j === '' || j === false || j === 0 || j === null;
}

function scalarJson(t: FieldType, v: DecodedValue | undefined): JsonValue {
  if (t === 'time') return timeJson(typeof v === 'bigint' ? v : null);
  if (t === 'fieldsV1') return v instanceof Uint8Array ? rawJson(v) : null;
  if (typeof t === 'object' && 'message' in t)
    return toJson(t.message, v instanceof Map ? (v as Decoded) : new Map());
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Uint8Array) return base64(v);
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  return null;
}

function base64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

/** `FieldsV1.Raw` is JSON; bytes that are not are refused as Go's marshaller refuses them. */
function rawJson(b: Uint8Array): JsonValue {
  try {
    return JSON.parse(utf8.decode(b)) as JsonValue;
  } catch {
    throw new WireError('json: error calling MarshalJSON for type *v1.FieldsV1: invalid JSON');
  }
}
