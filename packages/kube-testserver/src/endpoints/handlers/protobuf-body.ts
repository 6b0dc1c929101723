/**
 * A create or update body in `application/vnd.kubernetes.protobuf`, as
 * the real server's create and update handlers answer it: a body that
 * does not read as protobuf is 400 in `transformDecodeError`'s words; a
 * kind this server has no schema for is 415 naming the kind (the real
 * server decodes every built-in kind; custom resources have no protobuf
 * there either, and get its plain 415).
 *
 * @module
 */
import { badRequest, StatusError, unsupportedMediaType } from '../../errors.js';
import type { JsonObject } from '../../json.js';
import { decodeObject, PROTOBUF_MEDIA_TYPE, readEnvelope } from '../../protobuf/envelope.js';
import { protobufKinds, protobufSchema } from '../../protobuf/kinds.js';
import { WireError } from '../../protobuf/wire.js';
import { groupVersion, type ResourceType } from '../../resource-type.js';

/** JSON and YAML: what every type's bodies may be in. */
const TEXT_MEDIA_TYPES: readonly string[] = ['application/json', 'application/yaml'];

/** Whether the server decodes protobuf bodies of this type. */
export function decodesProtobuf(t: ResourceType): boolean {
  return !t.custom && protobufSchema(groupVersion(t), t.kind) !== undefined;
}

/** The media types a body of this type may be in, as a 415 lists them. */
export function bodyMediaTypes(t: ResourceType): readonly string[] {
  return decodesProtobuf(t) ? [...TEXT_MEDIA_TYPES, PROTOBUF_MEDIA_TYPE] : TEXT_MEDIA_TYPES;
}

/** 415 for a protobuf body of a kind this server cannot decode, naming the kind. */
function undecodable(apiVersion: string, kind: string): StatusError {
  const plain = unsupportedMediaType(TEXT_MEDIA_TYPES).status;
  return new StatusError({
    ...plain,
    message: `${plain.message} (${PROTOBUF_MEDIA_TYPE} is decoded by this test server only for ${protobufKinds().join(', ')}; not for ${apiVersion} ${kind})`,
  });
}

/**
 * `summarizeData`: the first 30 bytes of a body for a 400 that quotes it,
 * as text when it starts like JSON, else in hex.
 */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, 30);
  const text = body[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return body.length > 30 ? `${text} ...` : text;
}

/**
 * The object a protobuf body encodes, as JSON. An empty `typeMeta` takes
 * the request's apiVersion and kind, as the serializer's defaulting does;
 * the caller then checks them against the request's type as for JSON.
 */
export function decodeProtobufBody(body: Buffer, t: ResourceType): JsonObject {
  if (t.custom) throw unsupportedMediaType(TEXT_MEDIA_TYPES);
  if (!decodesProtobuf(t)) throw undecodable(groupVersion(t), t.kind);
  let envelope: ReturnType<typeof readEnvelope>;
  try {
    envelope = readEnvelope(body);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    throw badRequest(
      `the object provided is unrecognized (must be of type ${t.kind}): ${e.message} (${summarize(body)})`,
    );
  }
  const apiVersion = envelope.apiVersion === '' ? groupVersion(t) : envelope.apiVersion;
  const kind = envelope.kind === '' ? t.kind : envelope.kind;
  const schema = protobufSchema(apiVersion, kind);
  if (schema === undefined) throw undecodable(apiVersion, kind);
  try {
    return decodeObject(schema, apiVersion, kind, envelope.raw);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    const version = apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
    throw badRequest(
      `${kind} in version "${version}" cannot be handled as a ${t.kind}: ${e.message}`,
    );
  }
}
