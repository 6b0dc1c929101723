/**
 * The Kubernetes store's writes to Proxies: the status through the status
 * subresource, the finalizer through merge patches made conditional by the
 * resourceVersion. A write that conflicts (409) reads the object again and
 * is made again on top of what it read, so a concurrent edit is never
 * overwritten; each answer goes into the cache (read-your-writes).
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import { API_VERSION, type ProxyStatus } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import type { ProxyCache } from './cache.js';
import { isStatus, type KubeClient } from './client.js';
import { proxyPath, type RawProxy, trim } from './raw.js';

/** What the writer is built with. */
export interface ProxyWriterOptions {
  readonly client: KubeClient;
  readonly cache: ProxyCache;
  readonly logger: Logger;
  /** Ends the writes in flight when the store closes. */
  readonly signal: AbortSignal;
}

/** Writes to Proxies, each retried on top of a fresh read after a conflict. */
export class ProxyWriter {
  readonly #client: KubeClient;
  readonly #cache: ProxyCache;
  readonly #log: Logger;
  readonly #signal: AbortSignal;

  constructor(opts: ProxyWriterOptions) {
    this.#client = opts.client;
    this.#cache = opts.cache;
    this.#log = opts.logger;
    this.#signal = opts.signal;
  }

  /** Replaces a Proxy's status; a Proxy that is gone is ignored. */
  async updateStatus(key: string, status: ProxyStatus): Promise<void> {
    const what = `writing the status of Proxy ${key}`;
    await this.#withRetry(key, what, (o) =>
      this.#client.request<RawProxy>({
        operation: what,
        method: 'PUT',
        path: `${proxyPath(key)}/status`,
        body: {
          apiVersion: API_VERSION,
          kind: 'Proxy',
          metadata: {
            name: o.metadata.name,
            namespace: o.metadata.namespace,
            uid: o.metadata.uid,
            resourceVersion: o.metadata.resourceVersion,
          },
          spec: o.spec,
          status,
        },
        signal: this.#signal,
      }),
    );
  }

  /** Adds a finalizer unless the Proxy has it. */
  async addFinalizer(key: string, finalizer: string): Promise<void> {
    await this.#patchFinalizers(key, `adding the finalizer to Proxy ${key}`, (f) =>
      f.includes(finalizer) ? undefined : [...f, finalizer],
    );
  }

  /** Removes a finalizer if the Proxy has it. */
  async removeFinalizer(key: string, finalizer: string): Promise<void> {
    await this.#patchFinalizers(key, `removing the finalizer from Proxy ${key}`, (f) =>
      f.includes(finalizer) ? f.filter((x) => x !== finalizer) : undefined,
    );
  }

  async #patchFinalizers(key: string, what: string, next: (f: string[]) => string[] | undefined) {
    await this.#withRetry(key, what, (o) => {
      const finalizers = next(o.metadata.finalizers ?? []);
      if (finalizers === undefined) return undefined;
      return this.#client.request<RawProxy>({
        operation: what,
        method: 'PATCH',
        path: proxyPath(key),
        contentType: 'application/merge-patch+json',
        // The resourceVersion makes the patch conditional: a list changed meanwhile is a 409.
        body: {
          metadata: {
            finalizers: finalizers.length === 0 ? null : finalizers,
            resourceVersion: o.metadata.resourceVersion,
          },
        },
        signal: this.#signal,
      });
    });
  }

  /** GETs a Proxy afresh (after a conflict); undefined when it is gone. */
  async #reread(key: string, what: string): Promise<RawProxy | undefined> {
    try {
      const o = await this.#client.request<RawProxy>({
        operation: `re-reading Proxy ${key} after a conflict (${what})`,
        method: 'GET',
        path: proxyPath(key),
        signal: this.#signal,
      });
      return trim(o);
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /**
   * Runs `write` on the newest copy of `key`; on a 409 reads the object again
   * and runs it on that, up to `DEFAULTS.conflictAttempts` times. `write`
   * returns undefined when there is nothing to do on that copy.
   */
  async #withRetry(
    key: string,
    what: string,
    write: (o: RawProxy) => Promise<RawProxy | undefined> | undefined,
  ): Promise<void> {
    let base = this.#cache.raw(key);
    for (let attempt = 1; ; attempt++) {
      if (base === undefined) return;
      try {
        const out = await write(base);
        if (out !== undefined) this.#cache.wrote(key, out);
        return;
      } catch (err) {
        if (isStatus(err, 404)) return;
        if (!isStatus(err, 409) || attempt >= DEFAULTS.conflictAttempts) throw err;
        this.#log.debug({ proxy: key, attempt }, `conflict ${what}; reading the Proxy again`);
        base = await this.#reread(key, what);
      }
    }
  }
}
