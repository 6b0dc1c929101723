/**
 * Writing an object the operator owns whole (a Secret, a ConfigMap): read
 * it, then create it or replace it on top of the version read, so a
 * concurrent write is a conflict (409) rather than lost.
 *
 * @module
 */
import { isStatus, type KubeClient } from './client.js';

/** What {@link upsert} writes. */
export interface UpsertRequest {
  /** For errors: `writing Secret default/web-endpoints`. */
  readonly operation: string;
  /** The collection (`/api/v1/namespaces/default/secrets`). */
  readonly collection: string;
  readonly name: string;
  /** The object, without a resourceVersion. */
  readonly body: { readonly metadata: Record<string, unknown> } & Record<string, unknown>;
  readonly signal?: AbortSignal | undefined;
  /** What a replacement carries over from the object there (a Service's cluster IPs). */
  readonly keep?: ((existing: Record<string, unknown>) => Record<string, unknown>) | undefined;
}

/** Reads an object; undefined when there is none (404). */
export async function getOrNothing<T>(
  client: KubeClient,
  operation: string,
  path: string,
  signal?: AbortSignal,
): Promise<T | undefined> {
  try {
    return await client.request<T>({ operation, method: 'GET', path, signal });
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/** Creates the object, or replaces the one there on top of the version read. */
export async function upsert(client: KubeClient, r: UpsertRequest): Promise<void> {
  const path = `${r.collection}/${r.name}`;
  const existing = await getOrNothing<
    { metadata?: { resourceVersion?: string } } & Record<string, unknown>
  >(client, r.operation, path, r.signal);
  if (existing === undefined) {
    await client.request({
      operation: r.operation,
      method: 'POST',
      path: r.collection,
      body: r.body,
      signal: r.signal,
    });
    return;
  }
  await client.request({
    operation: r.operation,
    method: 'PUT',
    path,
    body: {
      ...r.body,
      ...r.keep?.(existing),
      metadata: { ...r.body.metadata, resourceVersion: existing.metadata?.resourceVersion },
    },
    signal: r.signal,
  });
}
