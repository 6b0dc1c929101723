/**
 * Content negotiation: what the `Accept` header asks for (plain JSON
 * objects, a meta.k8s.io Table or PartialObjectMetadata), and the 406 for
 * the encodings the server does not answer in (the real server's
 * `handlers/negotiation`): protobuf, YAML and CBOR answers are not
 * written, so a client must also accept JSON (kubectl and client-go send
 * `application/vnd.kubernetes.protobuf,application/json`).
 *
 * @module
 */
import { notAcceptable } from '../errors.js';

/** Media types a real server answers in and this one does not. */
const UNSPOKEN = /application\/vnd\.kubernetes\.protobuf|application\/yaml|application\/cbor/;

/** How an answer is rendered. */
export type Rendering =
  | { as: 'object' }
  | { as: 'table'; apiVersion: string }
  | { as: 'partial'; apiVersion: string };

/** What the `Accept` header asks for: JSON objects, a Table, or PartialObjectMetadata. */
export function negotiate(accept: string | undefined): Rendering {
  if (accept === undefined || accept.trim() === '') return { as: 'object' };
  let plainOk = false;
  for (const raw of accept.split(',')) {
    const [type, ...paramList] = raw.split(';').map((s) => s.trim());
    const params = new Map(paramList.map((p) => p.split('=') as [string, string]));
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const as = params.get('as');
    const g = params.get('g');
    const v = params.get('v');
    if (as === undefined) {
      plainOk = true;
      continue;
    }
    if (g === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1')) {
      if (as === 'Table') return { as: 'table', apiVersion: `meta.k8s.io/${v}` };
      if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList')
        return { as: 'partial', apiVersion: `meta.k8s.io/${v}` };
    }
  }
  if (plainOk) return { as: 'object' };
  const refused = UNSPOKEN.exec(accept);
  if (refused !== null) {
    throw notAcceptable(
      `only the following media types are accepted: application/json (this test server does not answer in ${refused[0]})`,
    );
  }
  return { as: 'object' };
}
