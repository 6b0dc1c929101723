/**
 * The Kubernetes store's ProviderHealth objects: cluster-scoped, one per
 * configured provider, listed once at start and kept from the answers to
 * the operator's own writes; each check round creates the object if needed
 * and replaces its status, a conflict re-reading it first.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { API_VERSION, type ProviderHealth } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import { messageOf } from '../runtime/message.js';
import { retrying } from '../runtime/retry.js';
import { isStatus, type KubeClient } from './client.js';
import { HEALTH_PATH, type RawHealth, trim } from './raw.js';

/** What the health store is built with. */
export interface HealthStoreOptions {
  readonly client: KubeClient;
  readonly logger: Logger;
  /** Ends the requests in flight when the store closes. */
  readonly signal: AbortSignal;
}

/** The ProviderHealth objects, as last listed or written. */
export class HealthStore {
  readonly #client: KubeClient;
  readonly #log: Logger;
  readonly #signal: AbortSignal;
  readonly #health = new Map<string, RawHealth>();

  constructor(opts: HealthStoreOptions) {
    this.#client = opts.client;
    this.#log = opts.logger;
    this.#signal = opts.signal;
  }

  /** Lists the ProviderHealth objects, retrying with backoff until it succeeds or `signal` aborts. */
  async load(signal: AbortSignal): Promise<void> {
    const list = await retrying(
      () =>
        this.#client.request<{ items: RawHealth[] }>({
          operation: 'listing ProviderHealth',
          method: 'GET',
          path: HEALTH_PATH,
          signal,
        }),
      signal,
      (err, retryInMs) =>
        this.#log.error({ err: messageOf(err), retryInMs }, 'listing ProviderHealth failed'),
    );
    for (const h of list.items) this.#health.set(h.metadata.name, trim(h));
  }

  /** Writes a provider's ProviderHealth, creating the object when it does not exist. */
  async write(health: ProviderHealth): Promise<void> {
    const name = health.name;
    const path = `${HEALTH_PATH}/${name}`;
    const signal = this.#signal;
    let base = this.#health.get(name);
    for (let attempt = 1; ; attempt++) {
      try {
        if (base === undefined) {
          base = trim(
            await this.#client.request<RawHealth>({
              operation: `creating ProviderHealth ${name}`,
              method: 'POST',
              path: HEALTH_PATH,
              body: {
                apiVersion: API_VERSION,
                kind: 'ProviderHealth',
                metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'proxy-op' } },
              },
              signal,
            }),
          );
        }
        const out = await this.#client.request<RawHealth>({
          operation: `writing the status of ProviderHealth ${name}`,
          method: 'PUT',
          path: `${path}/status`,
          body: {
            apiVersion: API_VERSION,
            kind: 'ProviderHealth',
            metadata: { name, resourceVersion: base.metadata.resourceVersion },
            status: health.status,
          },
          signal,
        });
        this.#health.set(name, trim(out));
        return;
      } catch (err) {
        if (attempt >= DEFAULTS.conflictAttempts) throw err;
        if (isStatus(err, 404)) base = undefined;
        else if (isStatus(err, 409)) {
          // A stale resourceVersion, or (on create) an object made meanwhile: read it.
          try {
            base = trim(
              await this.#client.request<RawHealth>({
                operation: `re-reading ProviderHealth ${name} after a conflict`,
                method: 'GET',
                path,
                signal,
              }),
            );
          } catch (e) {
            if (!isStatus(e, 404)) throw e;
            base = undefined;
          }
        } else throw err;
      }
    }
  }

  /** Deletes the ProviderHealth of a provider no longer configured. */
  async delete(name: string): Promise<void> {
    this.#health.delete(name);
    try {
      await this.#client.request<unknown>({
        operation: `deleting ProviderHealth ${name} of a provider no longer configured`,
        method: 'DELETE',
        path: `${HEALTH_PATH}/${name}`,
        signal: this.#signal,
      });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  /** Every ProviderHealth that has a status. */
  list(): ProviderHealth[] {
    const out: ProviderHealth[] = [];
    for (const [name, h] of this.#health) if (h.status) out.push({ name, status: h.status });
    return out;
  }
}
