/**
 * The envelope of a Kubernetes protobuf body: the four bytes `k8s\0`,
 * then a `runtime.Unknown` naming the object's apiVersion and kind, whose
 * `raw` bytes are the object's own message. Read as apimachinery's
 * protobuf serializer reads it, with its error texts.
 *
 * @module
 */
import type { JsonObject } from '../json.js';
import { type Decoded, decodeMessage, type MessageSchema, toJson } from './message.js';
import { TYPE_META, UNKNOWN } from './meta.js';
import { WireError } from './wire.js';

/** The media type of Kubernetes protobuf bodies. */
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** `k8s\0`: the prefix of every Kubernetes protobuf body. */
export const PROTOBUF_MAGIC: readonly number[] = [0x6b, 0x38, 0x73, 0x00];

/** What the envelope says: the object's type and its encoding. */
export interface Envelope {
  /** `typeMeta.apiVersion` (`''` when the client left it out). */
  readonly apiVersion: string;
  /** `typeMeta.kind` (`''` when the client left it out). */
  readonly kind: string;
  /** The object's protobuf encoding. */
  readonly raw: Uint8Array;
  /** `contentEncoding` (unused by the real server when decoding a request). */
  readonly contentEncoding: string;
  /** `contentType` (likewise unused). */
  readonly contentType: string;
}

/**
 * Reads the magic and the `runtime.Unknown` after it. Throws a
 * {@link WireError} with the serializer's words for an empty body, a
 * missing magic, a body of the magic alone, or an envelope that does not
 * read as protobuf.
 */
export function readEnvelope(body: Uint8Array): Envelope {
  if (body.length === 0) throw new WireError('empty data');
  if (body.length < PROTOBUF_MAGIC.length || PROTOBUF_MAGIC.some((b, i) => body[i] !== b))
    throw new WireError(
      `provided data does not appear to be a protobuf message, expected prefix [${PROTOBUF_MAGIC.join(' ')}]`,
    );
  if (body.length === PROTOBUF_MAGIC.length) throw new WireError('empty body');
  const unknown = decodeMessage(UNKNOWN, body.subarray(PROTOBUF_MAGIC.length));
  const typeMeta = unknown.get(1);
  const tm = typeMeta instanceof Map ? toJson(TYPE_META, typeMeta as Decoded) : {};
  const raw = unknown.get(2);
  const text = (n: number) => {
    const v = unknown.get(n);
    return typeof v === 'string' ? v : '';
  };
  return {
    apiVersion: typeof tm.apiVersion === 'string' ? tm.apiVersion : '',
    kind: typeof tm.kind === 'string' ? tm.kind : '',
    raw: raw instanceof Uint8Array ? raw : new Uint8Array(0),
    contentEncoding: text(3),
    contentType: text(4),
  };
}

/**
 * The JSON object an object's protobuf encoding stands for, `kind` and
 * `apiVersion` first as the Go types write them. Throws a
 * {@link WireError} when `raw` does not read as `schema`.
 */
export function decodeObject(
  schema: MessageSchema,
  apiVersion: string,
  kind: string,
  raw: Uint8Array,
): JsonObject {
  return { kind, apiVersion, ...toJson(schema, decodeMessage(schema, raw)) };
}
