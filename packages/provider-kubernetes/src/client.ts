/**
 * The production seam: `@kubernetes/client-node`'s typed APIs over one
 * undici connection pool per provider, a bearer token read on every
 * request, a per-call budget, and failures turned into the provider's own
 * errors.
 *
 * @module
 */
import type {
  ApiException,
  Configuration,
  CoreV1Api,
  CustomObjectsApi,
  HttpLibrary,
  RequestContext,
  ResponseContext,
  V1Pod,
  V1PodList,
  V1Secret,
  VersionApi,
} from '@kubernetes/client-node';
import type { SecretSet } from '@proxy-op/contract';
import type { Agent } from 'undici';
import type { KubernetesConfig } from './config.js';
import { type ClusterAccess, loadAccess } from './credentials.js';
import { KubernetesApiError, KubernetesConnectionError, type StatusDetails } from './errors.js';
import type { KubernetesSeam, ProxyRef, ServerVersion, Target } from './seam.js';

/** The Proxy resource an OwnerReference names. */
export const PROXY_RESOURCE = Object.freeze({
  group: 'proxy-op.io',
  version: 'v1alpha1',
  plural: 'proxies',
  kind: 'Proxy',
});

/** The client libraries, loaded on the first call rather than with the module. */
type ClientNode = typeof import('@kubernetes/client-node');
type Undici = typeof import('undici');

interface Apis {
  readonly k8s: ClientNode;
  readonly undici: Undici;
  readonly access: ClusterAccess;
  readonly agent: Agent;
  readonly conf: Configuration;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly version: VersionApi;
}

/** Options of {@link ClientNodeSeam}. */
export interface ClientOptions {
  readonly config: KubernetesConfig;
  /** Every credential read is declared here, for the shell to redact. */
  readonly secrets: SecretSet;
}

function errorCodeOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== null && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function statusFrom(err: ApiException<unknown>): KubernetesApiError {
  let body: unknown = err.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  const s = (body !== null && typeof body === 'object' ? body : {}) as {
    kind?: unknown;
    reason?: unknown;
    message?: unknown;
    details?: unknown;
  };
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const d = (s.details !== null && typeof s.details === 'object' ? s.details : {}) as Record<
    string,
    unknown
  >;
  const details: StatusDetails = {
    ...(typeof d.name === 'string' ? { name: d.name } : {}),
    ...(typeof d.group === 'string' ? { group: d.group } : {}),
    ...(typeof d.kind === 'string' ? { kind: d.kind } : {}),
  };
  const reason = s.kind === 'Status' ? str(s.reason) : err.code === 401 ? 'Unauthorized' : '';
  let message = s.kind === 'Status' ? str(s.message) : '';
  if (err.code === 403 && /cannot \S+ resource "/.test(message)) {
    message += '; grant the rules of rbac/role.yaml of @proxy-op/provider-kubernetes';
  }
  return new KubernetesApiError(err.code, reason, message, details);
}

/**
 * The seam over the API server. Nothing is read or dialled until the
 * first call: then the kubeconfig (or the in-cluster files) is loaded and
 * kept; a load that fails is tried again on the next call.
 */
export class ClientNodeSeam implements KubernetesSeam {
  readonly #o: ClientOptions;
  #apis: Apis | undefined;
  #libraries: { k8s: ClientNode; undici: Undici } | undefined;

  constructor(o: ClientOptions) {
    this.#o = o;
  }

  /** The API server's URL once the credentials were read, for the Checker's address. */
  get server(): string | undefined {
    return this.#apis?.access.server;
  }

  async #ready(): Promise<Apis> {
    if (this.#apis !== undefined) return this.#apis;
    this.#libraries ??= {
      k8s: await import('@kubernetes/client-node'),
      undici: await import('undici'),
    };
    if (this.#apis !== undefined) return this.#apis;
    const { k8s, undici } = this.#libraries;
    const access = loadAccess(this.#o.config, this.#o.secrets, k8s);
    const agent = new undici.Agent({
      connect: {
        ...(access.ca === undefined ? {} : { ca: access.ca }),
        ...(access.cert === undefined ? {} : { cert: access.cert }),
        ...(access.key === undefined ? {} : { key: access.key }),
        ...(access.servername === undefined ? {} : { servername: access.servername }),
        rejectUnauthorized: access.rejectUnauthorized,
      },
      connections: 8,
      keepAliveTimeout: 30_000,
    });
    const conf = k8s.createConfiguration({
      baseServer: new k8s.ServerConfiguration(access.server, {}),
      authMethods: {},
    });
    this.#apis = {
      k8s,
      undici,
      access,
      agent,
      conf,
      core: new k8s.CoreV1Api(conf),
      custom: new k8s.CustomObjectsApi(conf),
      version: new k8s.VersionApi(conf),
    };
    return this.#apis;
  }

  /**
   * Runs one call with the signal it was given (the seam's decorator joins
   * the caller's with the per-call budget): the request goes through
   * {@link send}, a failure status becomes a {@link KubernetesApiError}.
   */
  async #call<T>(
    signal: AbortSignal | undefined,
    fn: (apis: Apis, options: { httpApi: HttpLibrary }) => Promise<T>,
  ): Promise<T> {
    signal?.throwIfAborted();
    const apis = await this.#ready();
    signal?.throwIfAborted();
    const httpApi = apis.k8s.wrapHttpLibrary({ send: (ctx) => this.#send(apis, ctx, signal) });
    try {
      return await fn(apis, { httpApi });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (err instanceof apis.k8s.ApiException) throw statusFrom(err as ApiException<unknown>);
      throw err;
    }
  }

  async #send(
    apis: Apis,
    ctx: RequestContext,
    signal: AbortSignal | undefined,
  ): Promise<ResponseContext> {
    const headers: Record<string, string> = { ...ctx.getHeaders() };
    const authorization = await apis.access.authorization(signal);
    if (authorization !== undefined) headers.Authorization = authorization;
    const body = ctx.getBody();
    let res: Awaited<ReturnType<Undici['request']>>;
    let text: string;
    try {
      res = await apis.undici.request(ctx.getUrl(), {
        method: ctx.getHttpMethod() as 'GET',
        headers,
        body: typeof body === 'string' ? body : body === undefined ? null : String(body),
        dispatcher: apis.agent,
        signal: signal ?? null,
      });
      text = await res.body.text();
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new KubernetesConnectionError(apis.access.server, errorCodeOf(err), err);
    }
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) {
      if (v !== undefined) flat[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
    }
    const type = flat['content-type'] ?? '';
    if (res.statusCode >= 200 && res.statusCode < 300 && !/\bjson\b/i.test(type)) {
      // An HTML page from a proxy in front, say: never read as an empty answer.
      throw new SyntaxError(
        `the API server answered ${res.statusCode} with ${type === '' ? 'no content type' : type}, not JSON`,
      );
    }
    return new apis.k8s.ResponseContext(
      res.statusCode,
      flat,
      new apis.k8s.SelfDecodingBody(Promise.resolve(Buffer.from(text, 'utf8'))),
    );
  }

  version(signal?: AbortSignal): Promise<ServerVersion> {
    return this.#call(signal, async ({ version }, o) => {
      const v = await version.getCode({}, o);
      if (typeof v.gitVersion !== 'string') throw new TypeError('/version has no gitVersion');
      return { gitVersion: v.gitVersion };
    });
  }

  createPod(at: { readonly namespace: string }, pod: V1Pod, signal?: AbortSignal): Promise<V1Pod> {
    return this.#call(signal, ({ core }, o) =>
      core.createNamespacedPod({ namespace: at.namespace, body: pod }, o),
    );
  }

  dryRunCreatePod(
    at: { readonly namespace: string },
    pod: V1Pod,
    signal?: AbortSignal,
  ): Promise<V1Pod> {
    return this.#call(signal, ({ core }, o) =>
      core.createNamespacedPod({ namespace: at.namespace, body: pod, dryRun: 'All' }, o),
    );
  }

  readPod(at: Target, signal?: AbortSignal): Promise<V1Pod> {
    return this.#call(signal, ({ core }, o) =>
      core.readNamespacedPod({ namespace: at.namespace, name: at.name }, o),
    );
  }

  deletePod(at: Target, uid: string, signal?: AbortSignal): Promise<void> {
    return this.#call(signal, async ({ core }, o) => {
      await core.deleteNamespacedPod(
        { namespace: at.namespace, name: at.name, body: { preconditions: { uid } } },
        o,
      );
    });
  }

  listPods(
    at: {
      readonly namespace?: string | undefined;
      readonly labelSelector: string;
      readonly limit?: number | undefined;
    },
    signal?: AbortSignal,
  ): Promise<V1PodList> {
    return this.#call(signal, ({ core }, o) => {
      const q = {
        labelSelector: at.labelSelector,
        ...(at.limit === undefined ? {} : { limit: at.limit }),
      };
      return at.namespace === undefined
        ? core.listPodForAllNamespaces(q, o)
        : core.listNamespacedPod({ namespace: at.namespace, ...q }, o);
    });
  }

  createSecret(
    at: { readonly namespace: string },
    secret: V1Secret,
    signal?: AbortSignal,
  ): Promise<V1Secret> {
    return this.#call(signal, ({ core }, o) =>
      core.createNamespacedSecret({ namespace: at.namespace, body: secret }, o),
    );
  }

  readSecret(at: Target, signal?: AbortSignal): Promise<V1Secret> {
    return this.#call(signal, ({ core }, o) =>
      core.readNamespacedSecret({ namespace: at.namespace, name: at.name }, o),
    );
  }

  replaceSecret(at: Target, secret: V1Secret, signal?: AbortSignal): Promise<V1Secret> {
    return this.#call(signal, ({ core }, o) =>
      core.replaceNamespacedSecret({ namespace: at.namespace, name: at.name, body: secret }, o),
    );
  }

  listProxies(at: { readonly namespace: string }, signal?: AbortSignal): Promise<ProxyRef[]> {
    return this.#call(signal, async ({ custom }, o) => {
      const list = (await custom.listNamespacedCustomObject(
        {
          group: PROXY_RESOURCE.group,
          version: PROXY_RESOURCE.version,
          namespace: at.namespace,
          plural: PROXY_RESOURCE.plural,
        },
        o,
      )) as { items: { metadata: { name: string; uid: string } }[] };
      return list.items.map((p) => ({ name: p.metadata.name, uid: p.metadata.uid }));
    });
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    const apis = this.#apis;
    this.#apis = undefined;
    await apis?.agent.close();
  }
}
