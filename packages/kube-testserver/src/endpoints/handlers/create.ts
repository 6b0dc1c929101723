/**
 * The create handler (the real server's `handlers/create.go`): POST of a
 * new object to its collection.
 *
 * @module
 */
import { methodNotSupported } from '../../errors.js';
import { writeJson } from '../responsewriters.js';
import { decodeBody, type ResourceRequest, render, writeOptions } from './rest.js';

/** POST to a collection: 201 with the stored object (405 when the path names an object). */
export function createResource(r: ResourceRequest): void {
  const { ctx, type: t } = r;
  if (r.name !== '') throw methodNotSupported({ group: t.group, resource: t.resource }, 'create');
  const opts = writeOptions(r, 'create');
  const obj = decodeBody(r);
  const created = ctx.engine.create(t, r.namespace, obj, opts);
  writeJson(r.res, 201, render(r, created), {}, opts.warnings);
}
