/**
 * Request info: the attributes of a request read from its method and path
 * (verb, API group and version, resource, subresource, namespace, name),
 * as the real server's `RequestInfoFactory` reads them before any filter
 * runs.
 *
 * @module
 */
import type { RequestRecord } from '../faults.js';

/** A request's attributes, and whether it names a resource at all. */
export interface RequestInfo {
  readonly record: RequestRecord;
  /** False for `/version`, discovery, `/openapi/...` and every other non-resource path. */
  readonly resourceRequest: boolean;
  /** The API version of a resource request (`''` otherwise). */
  readonly version: string;
}

/** Splits a path into the request attributes, as the real server's `RequestInfoFactory`. */
export function requestInfo(method: string, url: URL): RequestInfo {
  const parts = url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const nonResource = (): RequestInfo => ({
    record: {
      verb: method.toLowerCase(),
      group: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
      path: url.pathname,
    },
    resourceRequest: false,
    version: '',
  });
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    group = '';
    version = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1]!;
    version = parts[2]!;
    rest = parts.slice(3);
  } else return nonResource();
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespace = rest[1]!;
    if (rest.length > 2 && rest[2] !== 'status' && rest[2] !== 'finalize') rest = rest.slice(2);
  }
  const resource = rest[0] ?? '';
  const name = rest[1] ?? '';
  const subresource = rest[2] ?? '';
  const watch = url.searchParams.get('watch');
  let verb: string;
  switch (method) {
    case 'GET':
    case 'HEAD':
      verb = watch === 'true' || watch === '1' ? 'watch' : name === '' ? 'list' : 'get';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name === '' ? 'deletecollection' : 'delete';
      break;
    default:
      verb = method.toLowerCase();
  }
  return {
    record: { verb, group, resource, subresource, namespace, name, path: url.pathname },
    resourceRequest: true,
    version,
  };
}
