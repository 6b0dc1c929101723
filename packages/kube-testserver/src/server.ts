/**
 * The server: `KubeTestServer` on loopback HTTPS with its options and
 * defaults, fault injection, request counters and a client for tests
 * (`request`).
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { INITIAL_NAMESPACES } from './builtins.js';
import type { ServerContext } from './endpoints/context.js';
import { handleRequest } from './endpoints/handler.js';
import type { OpenWatch } from './endpoints/handlers/watch.js';
import { Engine } from './engine/engine.js';
import { FaultState, RequestCounters, type RequestFilter } from './faults.js';
import type { JsonObject } from './json.js';
import { type KubeconfigOptions, kubeconfigYaml } from './kubeconfig.js';
import type { User } from './rbac.js';
import { Registry } from './registry.js';
import { Store } from './store.js';
import { type ServingCertificates, servingCertificates } from './tls.js';

/** Options of {@link KubeTestServer.start}; every field has a default (see {@link defaults}). */
export interface KubeTestServerOptions {
  /** The Kubernetes version `/version` reports, `major.minor.patch`. */
  readonly version?: string;
  /**
   * How many changes the server keeps for watches to resume from; a watch
   * from an older resourceVersion gets 410 Gone.
   */
  readonly watchHistory?: number;
  /** How often a watch that asked for bookmarks (`allowWatchBookmarks=true`) gets one. */
  readonly bookmarkIntervalMs?: number;
  /** The loopback port to listen on (0 picks a free one). */
  readonly port?: number;
  /** A CA and serving certificate to use instead of generating them with `openssl`. */
  readonly certificates?: ServingCertificates;
}

/** The defaults of {@link KubeTestServerOptions}. */
export const defaults = {
  version: '1.32.0',
  watchHistory: 10_000,
  bookmarkIntervalMs: 60_000,
  port: 0,
} as const;

/** A fault to answer instead of serving requests: see {@link Faults.fail}. */
export interface FailOptions {
  /** How many matching requests fail (default: every one until {@link Faults.reset}). */
  readonly count?: number;
  /** Only requests matching this filter fail. */
  readonly filter?: RequestFilter;
  /** The Status reason (default: `InternalError` for 5xx, `TooManyRequests` for 429, else `BadRequest`). */
  readonly reason?: string;
  /** The Status message. */
  readonly message?: string;
}

/** Faults a test injects into the server. */
export class Faults {
  readonly #state: FaultState;
  readonly #watches: Set<OpenWatch>;
  readonly #store: Store;

  /** @internal */
  constructor(state: FaultState, watches: Set<OpenWatch>, store: Store) {
    this.#state = state;
    this.#watches = watches;
    this.#store = store;
  }

  /**
   * Ends every open watch now. By default the stream ends cleanly, as when
   * the real server's watch timeout fires (clients resume from their last
   * resourceVersion); `{ abrupt: true }` destroys the connections instead.
   * Returns how many watches were dropped.
   */
  dropWatches(opts: { abrupt?: boolean } = {}): number {
    const open = [...this.#watches];
    for (const w of open) {
      if (opts.abrupt === true) w.destroy();
      else w.end();
    }
    return open.length;
  }

  /** Answers the next `n` writes that match the filter with 409 Conflict, as an optimistic-lock failure. */
  conflictNextWrites(n: number, filter?: RequestFilter): void {
    this.#state.conflicts.push({ remaining: n, filter });
  }

  /** Holds every matching request for `ms` before serving it (until {@link reset}). */
  delay(ms: number, filter?: RequestFilter): void {
    this.#state.delays.push({ ms, filter });
  }

  /** Answers matching requests with an error Status of the given HTTP code. */
  fail(status: number, opts: FailOptions = {}): void {
    const reason =
      opts.reason ??
      (status >= 500
        ? 'InternalError'
        : status === 429
          ? 'TooManyRequests'
          : status === 409
            ? 'Conflict'
            : 'BadRequest');
    this.#state.failures.push({
      remaining: opts.count ?? -1,
      status,
      reason,
      message: opts.message ?? `injected fault: ${status}`,
      filter: opts.filter,
    });
  }

  /**
   * Forgets the change history: a watch (or a list `continue`) from any
   * resourceVersion before now gets 410 Gone (`Expired`), as after etcd
   * compaction.
   */
  expireWatchWindow(): void {
    this.#store.expireHistory();
  }

  /** Clears every delay, failure and pending conflict. */
  reset(): void {
    this.#state.reset();
  }
}

function randomToken(): string {
  return randomBytes(24).toString('base64url');
}

/** What {@link KubeTestServer.request} sends besides the method and path. */
export interface RequestOptions {
  /** A JSON value (sent as JSON), or a string or bytes (sent as they are, e.g. a protobuf body). */
  readonly body?: unknown;
  /** Default `application/json` when there is a body. */
  readonly contentType?: string;
  /** Default the admin token. */
  readonly token?: string;
  readonly accept?: string;
}

/** One HTTP exchange with the server. */
export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON, shape unknown
  readonly body: any;
}

/**
 * An in-process Kubernetes API server on loopback HTTPS, for tests that run
 * kubectl or a Kubernetes client against something that behaves like the
 * real one. See the package README for what it implements and what it does
 * not.
 */
export class KubeTestServer {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** The CA certificate (PEM) that signed the serving certificate. */
  readonly caCert: string;
  /** A bearer token that every request is allowed with (RBAC is not consulted). */
  readonly adminToken: string;
  /** Fault controls. */
  readonly faults: Faults;
  /** Request counts by verb and resource. */
  readonly counters: RequestCounters;

  readonly #server: Server;
  readonly #ctx: ServerContext;
  readonly #tokens: Map<string, User>;

  private constructor(
    server: Server,
    url: string,
    ca: string,
    ctx: ServerContext,
    tokens: Map<string, User>,
    admin: string,
    faults: Faults,
  ) {
    this.#server = server;
    this.url = url;
    this.caCert = ca;
    this.#ctx = ctx;
    this.#tokens = tokens;
    this.adminToken = admin;
    this.faults = faults;
    this.counters = ctx.counters;
  }

  /** Starts a server on `127.0.0.1` with the default namespaces. */
  static async start(options: KubeTestServerOptions = {}): Promise<KubeTestServer> {
    const certs = options.certificates ?? (await servingCertificates());
    const store = new Store({ historyCapacity: options.watchHistory ?? defaults.watchHistory });
    const registry = new Registry(store);
    const engine = new Engine(store, registry);
    const [major = '1', minor = '32'] = (options.version ?? defaults.version).split('.');
    const tokens = new Map<string, User>();
    const admin = randomToken();
    tokens.set(admin, {
      name: 'kube-testserver-admin',
      groups: ['system:masters', 'system:authenticated'],
      admin: true,
    });
    const state = new FaultState();
    const openWatches = new Set<OpenWatch>();
    let address = '127.0.0.1:0';
    const ctx: ServerContext = {
      store,
      registry,
      engine,
      tokens,
      version: { major, minor, gitVersion: `v${options.version ?? defaults.version}` },
      serverAddress: () => address,
      openWatches,
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? defaults.bookmarkIntervalMs,
      faults: state,
      counters: new RequestCounters(),
    };
    const system = {
      fieldManager: 'kube-apiserver',
      dryRun: false,
      fieldValidation: 'Ignore' as const,
      warnings: [],
      verb: 'create' as const,
    };
    const nsType = registry.find('', 'v1', 'namespaces')!;
    for (const name of INITIAL_NAMESPACES)
      engine.create(nsType, '', { metadata: { name } }, system);
    // The real API server keeps an idle connection 90 s and gives a request's headers 32 s
    // (k8s.io/apiserver SecureServingInfo). Node's 5 s idle default would close connections
    // its clients are about to reuse, a reset no real cluster produces at that pace.
    const server = createServer(
      {
        key: certs.key,
        cert: certs.cert,
        keepAliveTimeout: 90_000,
        headersTimeout: 32_000,
        requestTimeout: 0,
      },
      (req, res) => {
        void handleRequest(ctx, req, res);
      },
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? defaults.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    address = `127.0.0.1:${port}`;
    const faults = new Faults(state, openWatches, store);
    return new KubeTestServer(
      server,
      `https://127.0.0.1:${port}`,
      certs.ca,
      ctx,
      tokens,
      admin,
      faults,
    );
  }

  /**
   * A bearer token for the service account `namespace/name` (user
   * `system:serviceaccount:<namespace>:<name>`, groups
   * `system:serviceaccounts`, `system:serviceaccounts:<namespace>`,
   * `system:authenticated`), whose requests RBAC decides. Creates the
   * ServiceAccount object when it does not exist.
   */
  serviceAccountToken(namespace: string, name: string): string {
    const saType = this.#ctx.registry.find('', 'v1', 'serviceaccounts')!;
    if (this.#ctx.store.get('/serviceaccounts', `${namespace}/${name}`) === undefined) {
      this.#ctx.engine.create(
        saType,
        namespace,
        { metadata: { name, namespace } },
        {
          fieldManager: 'kube-testserver',
          dryRun: false,
          fieldValidation: 'Ignore',
          warnings: [],
          verb: 'create',
        },
      );
    }
    const token = randomToken();
    this.#tokens.set(token, {
      name: `system:serviceaccount:${namespace}:${name}`,
      groups: [
        'system:serviceaccounts',
        `system:serviceaccounts:${namespace}`,
        'system:authenticated',
      ],
      admin: false,
    });
    return token;
  }

  /** A bearer token for a plain user (and groups), whose requests RBAC decides. */
  userToken(name: string, groups: readonly string[] = []): string {
    const token = randomToken();
    this.#tokens.set(token, { name, groups: [...groups, 'system:authenticated'], admin: false });
    return token;
  }

  /** A kubeconfig (YAML) for this server; the admin token unless `token` is given. */
  kubeconfig(opts: KubeconfigOptions = {}): string {
    return kubeconfigYaml(this.url, this.caCert, opts.token ?? this.adminToken, opts);
  }

  /** Writes {@link kubeconfig} to `path` (mode 0600) and returns the path. */
  async writeKubeconfig(path: string, opts: KubeconfigOptions = {}): Promise<string> {
    await writeFile(path, this.kubeconfig(opts), { mode: 0o600 });
    return path;
  }

  /**
   * Resolves when the server's controllers (garbage collection, namespace
   * and CRD cleanup) have finished reacting to the writes so far.
   */
  settled(): Promise<void> {
    return this.#ctx.engine.settled();
  }

  /**
   * Sends one request over HTTPS (trusting the server's CA) as the admin, or
   * as `opts.token`, and reads the whole answer: for tests that speak the
   * API without a client library.
   */
  request(method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
    const payload =
      opts.body === undefined
        ? undefined
        : typeof opts.body === 'string' || opts.body instanceof Uint8Array
          ? opts.body
          : JSON.stringify(opts.body);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(new URL(path, this.url), {
        method,
        ca: this.caCert,
        headers: {
          Authorization: `Bearer ${opts.token ?? this.adminToken}`,
          ...(payload === undefined
            ? {}
            : {
                'Content-Type': opts.contentType ?? 'application/json',
                'Content-Length': String(Buffer.byteLength(payload)),
              }),
          ...(opts.accept === undefined ? {} : { Accept: opts.accept }),
        },
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** The latest resourceVersion the server has committed. */
  get resourceVersion(): string {
    return String(this.#ctx.store.resourceVersion);
  }

  /** A copy of every stored object of a resource (`group/resource`, `''` group for core), sorted by key. */
  objects(group: string, resource: string, namespace?: string): JsonObject[] {
    return this.#ctx.store
      .list(`${group}/${resource}`, namespace)
      .map(({ object }) => structuredClone(object));
  }

  /** Ends every watch and stops listening. */
  async stop(): Promise<void> {
    for (const w of [...this.#ctx.openWatches]) w.end();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
