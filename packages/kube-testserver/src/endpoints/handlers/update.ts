/**
 * The update handler (the real server's `handlers/update.go`): PUT of a
 * whole object, or of its status subresource.
 *
 * @module
 */
import { writeJson } from '../responsewriters.js';
import { decodeBody, type ResourceRequest, render, writeOptions } from './rest.js';

/** PUT of an object (or its status): the object as stored. */
export function updateResource(r: ResourceRequest): void {
  const { ctx, type: t } = r;
  const opts = writeOptions(r, 'update');
  const obj = decodeBody(r);
  const updated = ctx.engine.write(t, r.namespace, r.name, obj, opts, r.scope, {
    requireVersion: true,
    managed: 'update',
  });
  writeJson(r.res, 200, render(r, updated), {}, opts.warnings);
}
