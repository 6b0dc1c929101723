/**
 * What every resource handler shares (the real server's `handlers/rest.go`
 * and `response.go`): the resolved request, reading and decoding the body,
 * the write options of the query, selectors, and rendering an object as
 * the client negotiated.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import type { WriteOptions } from '../../engine/options.js';
import { badRequest, unsupportedMediaType } from '../../errors.js';
import type { Scope } from '../../fieldmanager.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from '../../json.js';
import { PROTOBUF_MEDIA_TYPE } from '../../protobuf/envelope.js';
import { groupVersion, type ResourceType, resourceKey } from '../../resource-type.js';
import { type Predicate, parseFieldSelector, parseLabelSelector } from '../../selectors.js';
import { parseIncludeObject, toPartial, toTable } from '../../table.js';
import type { ServerContext } from '../context.js';
import type { Rendering } from '../negotiation.js';
import { bodyMediaTypes, decodeProtobufBody } from './protobuf-body.js';

/** One resource request, resolved to its type, as a verb handler receives it. */
export interface ResourceRequest {
  readonly ctx: ServerContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly type: ResourceType;
  /** The namespace of the path (`''` for a cluster-scoped type). */
  readonly namespace: string;
  /** The object's name (`''` for the collection). */
  readonly name: string;
  /** `status` for the status subresource, else `main`. */
  readonly scope: Scope;
  readonly rendering: Rendering;
  /** The whole request body (empty for GET and HEAD). */
  readonly body: Buffer;
}

/** Reads the whole request body. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseJson(body: Buffer, t: ResourceType): JsonValue {
  try {
    return JSON.parse(body.toString('utf8')) as JsonValue;
  } catch (e) {
    throw badRequest(
      `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/**
 * The body of a create or update as an object of the request's type:
 * JSON, YAML or (for the kinds {@link decodeProtobufBody} knows) protobuf
 * by `Content-Type` (415 otherwise), 400 when its kind or apiVersion names
 * another type.
 */
export function decodeBody(r: ResourceRequest): JsonObject {
  const { req, body, type: t } = r;
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim();
  let v: JsonValue;
  if (type === 'application/json' || type === '' || type === '*/*') v = parseJson(body, t);
  else if (type === 'application/yaml') v = parseYaml(body.toString('utf8')) as JsonValue;
  else if (type === PROTOBUF_MEDIA_TYPE) v = decodeProtobufBody(body, t);
  else throw unsupportedMediaType(bodyMediaTypes(t));
  if (!isObject(v))
    throw badRequest(`Object 'Kind' is missing in '${body.toString('utf8').slice(0, 100)}'`);
  const kind = v.kind;
  const apiVersion = v.apiVersion;
  if (
    (typeof kind === 'string' && kind !== '' && kind !== t.kind) ||
    (typeof apiVersion === 'string' && apiVersion !== '' && apiVersion !== groupVersion(t))
  ) {
    throw badRequest(
      `the API version in the data (${String(apiVersion ?? '')}) does not match the expected API version (${groupVersion(t)})`,
    );
  }
  return v;
}

/** `fieldManager`, `dryRun` and `fieldValidation` of a write, checked as the real server checks them. */
export function writeOptions(r: ResourceRequest, verb: WriteOptions['verb']): WriteOptions {
  const { url } = r;
  const userAgent = r.req.headers['user-agent'];
  const fv = url.searchParams.get('fieldValidation');
  if (fv !== null && fv !== 'Strict' && fv !== 'Warn' && fv !== 'Ignore')
    throw badRequest(
      `fieldValidation: Unsupported value: "${fv}": supported values: "Ignore", "Strict", "Warn"`,
    );
  const dryRun = url.searchParams.getAll('dryRun');
  for (const d of dryRun)
    if (d !== 'All') throw badRequest(`dryRun: Unsupported value: "${d}": supported values: "All"`);
  const manager =
    url.searchParams.get('fieldManager') ?? (userAgent ?? '').split('/')[0]!.slice(0, 128);
  return {
    fieldManager: manager,
    dryRun: dryRun.length > 0,
    fieldValidation: fv ?? 'Warn',
    warnings: [],
    verb,
  };
}

/** The `labelSelector` and `fieldSelector` of the query as one predicate. */
export function predicateFor(url: URL, t: ResourceType): Predicate {
  const ls = url.searchParams.get('labelSelector');
  const fs = url.searchParams.get('fieldSelector');
  const l = ls === null || ls === '' ? undefined : parseLabelSelector(ls);
  const f = fs === null || fs === '' ? undefined : parseFieldSelector(fs, resourceKey(t), t.custom);
  return (o) => (l === undefined || l(o)) && (f === undefined || f(o));
}

/** The object with `apiVersion` and `kind` first. */
export function withTypeMeta(t: ResourceType, o: JsonObject): JsonObject {
  return { apiVersion: groupVersion(t), kind: t.kind, ...o };
}

/** One object as the request negotiated it: itself, a one-row Table, or its PartialObjectMetadata. */
export function render(r: ResourceRequest, o: JsonObject): JsonValue {
  const { type: t, rendering, url } = r;
  if (rendering.as === 'table')
    return toTable(
      t,
      [o],
      { resourceVersion: str(meta(o), 'resourceVersion') ?? '' },
      {
        includeObject: parseIncludeObject(url.searchParams.get('includeObject')),
        noHeaders: false,
        apiVersion: rendering.apiVersion,
      },
    );
  if (rendering.as === 'partial') return toPartial(o, rendering.apiVersion);
  return o;
}
