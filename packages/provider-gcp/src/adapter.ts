/**
 * The production seam: `@google-cloud/compute` over its REST transport.
 * The SDK is loaded, and each of its clients built, on the first call that
 * needs it, so building a provider costs nothing and touches no network.
 * Every call carries the caller's signal and its budget (`timeouts`), makes
 * no retries of its own (the operator retries), and turns the client's
 * error into a {@link ComputeApiError} that keeps only the status, the
 * reasons and the API's message.
 *
 * @module
 */
import type { SecretSet } from '@proxy-op/contract';
import { endpointParts, type GcpConfig } from './config.js';
import { ComputeApiError, CredentialsError } from './errors.js';
import { lastSegment } from './ids.js';
import type {
  ComputeSeam,
  FirewallBody,
  FirewallView,
  InstanceView,
  ListedInstances,
  OperationView,
} from './seam.js';

/**
 * Where the provider gets its access token: a `GoogleAuth` or an
 * `AuthClient` from `google-auth-library` (both have `getAccessToken`).
 * The SDK clients authenticate with it; the provider also reads the token
 * before each call to keep it out of every error and log line.
 */
export interface GcpAuth {
  getAccessToken(): Promise<unknown>;
}

/** What the production seam is built from. */
export interface ComputeAdapterOptions {
  readonly config: GcpConfig;
  /** The credentials; unset: a `GoogleAuth` for `config.credentialsFile` or Application Default Credentials. */
  readonly auth?: GcpAuth | undefined;
  /** Every token read is added here, so the operation shell redacts it. */
  readonly secrets: SecretSet;
}

/** The production seam and the way to release its clients. */
export interface ComputeAdapter {
  readonly seam: ComputeSeam;
  /** Closes every SDK client built so far; calls after it fail. */
  close(): Promise<void>;
}

/** The OAuth scope the clients ask for. */
export const COMPUTE_SCOPE = 'https://www.googleapis.com/auth/compute';

type Sdk = typeof import('@google-cloud/compute');
type CallOptions = { signal?: AbortSignal; timeout: number; retry: null };
type ClientOptions = NonNullable<ConstructorParameters<Sdk['InstancesClient']>[0]>;
type Closable = { close(): Promise<void> };

const RAW_PAYLOAD = Symbol.for('google-gax.rawHttpResponsePayload');
const DECODE_FAILURE = /Received null|malformed response|fromProto3JSON|cannot contain value/;

/** Builds the production seam over `@google-cloud/compute`. Makes no call and loads nothing yet. */
export function createComputeAdapter(o: ComputeAdapterOptions): ComputeAdapter {
  const { config, secrets } = o;
  const project = config.project;
  const { host, port, protocol } = endpointParts(config.endpoint);
  let sdk: Promise<Sdk> | undefined;
  let auth: Promise<GcpAuth> | undefined;
  const clients = new Map<string, Promise<Closable>>();
  let closed = false;

  const loadAuth = (): Promise<GcpAuth> => {
    auth ??= (async () => {
      if (o.auth !== undefined) return o.auth;
      const { GoogleAuth } = await import('google-auth-library');
      return new GoogleAuth({
        scopes: [COMPUTE_SCOPE],
        ...(config.credentialsFile === undefined ? {} : { keyFilename: config.credentialsFile }),
      }) as GcpAuth;
    })();
    return auth;
  };

  /** One SDK client of each kind, built on first use with the endpoint and credentials. */
  const client = <T extends Closable>(
    kind: string,
    make: (s: Sdk, opts: ClientOptions) => T,
  ): Promise<T> => {
    if (closed) return Promise.reject(new Error('the gcp provider is closed'));
    let c = clients.get(kind);
    if (c === undefined) {
      c = (async () => {
        sdk ??= import('@google-cloud/compute');
        const [s, a] = await Promise.all([sdk, loadAuth()]);
        const credentials = ('getClient' in a
          ? { auth: a }
          : { authClient: a }) as unknown as Partial<ClientOptions>;
        return make(s, {
          apiEndpoint: host,
          port,
          protocol,
          fallback: true,
          ...credentials,
        });
      })();
      clients.set(kind, c);
      c.catch(() => clients.delete(kind));
    }
    return c as Promise<T>;
  };
  const instances = () => client('instances', (s, opts) => new s.InstancesClient(opts));
  // The v1 request type of instances.aggregatedList in @google-cloud/compute has no
  // returnPartialSuccess (v1beta's has): the listing goes through the v1beta client.
  const listing = () => client('listing', (s, opts) => new s.v1beta.InstancesClient(opts));
  const zoneOps = () => client('zoneOperations', (s, opts) => new s.ZoneOperationsClient(opts));
  const firewalls = () => client('firewalls', (s, opts) => new s.FirewallsClient(opts));

  /** Reads the token (declaring it secret) and builds the call options. */
  const prepare = async (budget: number, signal: AbortSignal | undefined): Promise<CallOptions> => {
    const a = await bounded(loadAuth(), signal, undefined, '');
    let token: unknown;
    try {
      token = await bounded(a.getAccessToken(), signal, budget, 'the access token');
    } catch (err) {
      if (signal?.aborted || err instanceof ComputeApiError) throw err;
      throw credentialsError(err);
    }
    const value =
      typeof token === 'string'
        ? token
        : typeof (token as { token?: unknown } | null)?.token === 'string'
          ? (token as { token: string }).token
          : undefined;
    if (value !== undefined && value !== '') secrets.add(value);
    signal?.throwIfAborted();
    return { ...(signal === undefined ? {} : { signal }), timeout: budget, retry: null };
  };

  const read = config.timeouts.readMs;
  const write = config.timeouts.writeMs;

  /** Runs one SDK call with its budget and signal; the client is built first if need be. */
  async function call<C, T>(
    budget: number,
    signal: AbortSignal | undefined,
    kind: () => Promise<C>,
    run: (c: C, opts: CallOptions) => Promise<T>,
  ): Promise<T> {
    const opts = await prepare(budget, signal);
    // Loading the SDK takes seconds the first time: a cancelled call does not wait for it.
    const c = await bounded(kind(), signal, undefined, '');
    try {
      return await run(c, opts);
    } catch (err) {
      throw translate(err, budget);
    }
  }
  async function orMissing<T>(p: Promise<T>): Promise<T | undefined> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof ComputeApiError && err.httpStatus === 404) return undefined;
      throw err;
    }
  }

  const seam: ComputeSeam = {
    getInstance: (zone, name, signal) =>
      orMissing(
        call(read, signal, instances, async (c, opts) => {
          const [inst] = await c.get({ project, zone, instance: name }, opts);
          return instanceView(inst, zone, 'instances.get');
        }),
      ),
    insertInstance: (zone, body, signal) =>
      call(write, signal, instances, async (c, opts) => {
        const [lro] = await c.insert(
          { project, zone, instanceResource: body as unknown as Record<string, unknown> },
          opts,
        );
        return operationView(lro.latestResponse, 'instances.insert');
      }),
    deleteInstance: (zone, name, signal) =>
      orMissing(
        call(write, signal, instances, async (c, opts) => {
          const [lro] = await c.delete({ project, zone, instance: name }, opts);
          return operationView(lro.latestResponse, 'instances.delete');
        }),
      ),
    listInstances: (filter, signal) =>
      call(read, signal, listing, async (c, opts) => {
        const out: InstanceView[] = [];
        const unreachable: string[] = [];
        const iterable = c.aggregatedListAsync(
          { project, filter, returnPartialSuccess: true, maxResults: 500 },
          { ...opts, autoPaginate: false },
        );
        for await (const [scope, list] of iterable) {
          scopedInstances(scope, list, out, unreachable);
        }
        return { instances: out, unreachable } satisfies ListedInstances;
      }),
    probeInstances: (filter, signal) =>
      call(read, signal, listing, async (c, opts) => {
        const iterable = c.aggregatedListAsync(
          { project, filter, returnPartialSuccess: true, maxResults: 1 },
          { ...opts, autoPaginate: false },
        );
        for await (const entry of iterable) {
          if (!Array.isArray(entry)) throw new TypeError('instances.aggregatedList: not a scope');
          break;
        }
      }),
    listInstanceOperations: (zone, targetLink, signal) =>
      call(read, signal, zoneOps, async (c, opts) => {
        const [ops] = await c.list(
          { project, zone, filter: `targetLink = "${targetLink}"` },
          { ...opts, autoPaginate: false },
        );
        if (!Array.isArray(ops)) throw new TypeError('zoneOperations.list: items is not a list');
        return ops
          .map((op) => operationView(op, 'zoneOperations.list'))
          .filter((op) => op.targetLink === targetLink)
          .sort((a, b) => Date.parse(b.insertTime) - Date.parse(a.insertTime));
      }),
    deleteOperation: async (zone, name, signal) => {
      await orMissing(
        call(read, signal, zoneOps, async (c, opts) => {
          await c.delete({ project, zone, operation: name }, opts);
        }),
      );
    },
    getFirewall: (name, signal) =>
      orMissing(
        call(read, signal, firewalls, async (c, opts) => {
          const [rule] = await c.get({ project, firewall: name }, opts);
          return firewallView(rule);
        }),
      ),
    insertFirewall: (body: FirewallBody, signal) =>
      call(write, signal, firewalls, async (c, opts) => {
        const [lro] = await c.insert(
          { project, firewallResource: body as unknown as Record<string, unknown> },
          opts,
        );
        return operationView(lro.latestResponse, 'firewalls.insert');
      }),
    deleteFirewall: (name, signal) =>
      orMissing(
        call(write, signal, firewalls, async (c, opts) => {
          const [lro] = await c.delete({ project, firewall: name }, opts);
          return operationView(lro.latestResponse, 'firewalls.delete');
        }),
      ),
  };

  return {
    seam,
    async close() {
      closed = true;
      const built = [...clients.values()];
      clients.clear();
      await Promise.all(
        built.map((c) =>
          c.then(
            (x) => x.close(),
            () => undefined,
          ),
        ),
      );
    },
  };
}

/**
 * Waits for `p`, or rejects with the signal's reason when it fires, or with a
 * Transient {@link ComputeApiError} once `ms` have passed (when given).
 * `p` is not stopped.
 */
function bounded<T>(
  p: Promise<T>,
  signal: AbortSignal | undefined,
  ms: number | undefined,
  what: string,
): Promise<T> {
  if (signal === undefined && ms === undefined) return p;
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal?.reason);
    };
    if (signal?.aborted) {
      p.catch(() => {});
      reject(signal.reason);
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    if (ms !== undefined) {
      timer = setTimeout(() => {
        done();
        reject(new ComputeApiError({ message: `${what}: no answer within ${ms} ms`, grpcCode: 4 }));
      }, ms);
    }
    p.then(
      (v) => {
        done();
        resolve(v);
      },
      (e: unknown) => {
        done();
        reject(e);
      },
    );
  });
}

/** The credentials error of a failed token read, without the library's details. */
function credentialsError(err: unknown): CredentialsError {
  const message = err instanceof Error ? err.message : String(err);
  if (/could not load the default credentials|ENOENT|no such file/i.test(message)) {
    return new CredentialsError(
      'missing',
      'no Google credentials found: set credentialsFile, GOOGLE_APPLICATION_CREDENTIALS, or run where a metadata server gives them',
    );
  }
  return new CredentialsError('invalid', 'the Google credentials could not be used to get a token');
}

interface ClientError {
  readonly message: string;
  readonly code?: unknown;
  readonly httpStatusCode?: unknown;
  readonly cause?: unknown;
  readonly [RAW_PAYLOAD]?: unknown;
}

/**
 * The error to throw for a failed SDK call: a {@link ComputeApiError} with
 * the HTTP status, gRPC code, reasons and message; a decoding failure of a
 * 200 answer as the `SyntaxError` or `TypeError` it was (the operation
 * shell makes it a malformed answer). The client's error is not kept: it
 * holds the request body and headers.
 */
export function translate(err: unknown, budget: number): unknown {
  if (err instanceof ComputeApiError || err instanceof TypeError || err instanceof SyntaxError) {
    return err;
  }
  if (err === null || typeof err !== 'object') return err;
  const e = err as ClientError;
  if (typeof e.message !== 'string') return err;
  const grpcCode = typeof e.code === 'number' ? e.code : undefined;
  if (typeof e.httpStatusCode === 'number') {
    const body = payloadOf(e[RAW_PAYLOAD]);
    return new ComputeApiError({
      message: body.message ?? e.message,
      httpStatus: e.httpStatusCode,
      grpcCode,
      reasons: body.reasons,
      status: body.status,
    });
  }
  const cause = e.cause;
  if (cause instanceof SyntaxError) return new SyntaxError(cause.message);
  if (cause instanceof TypeError || cause instanceof RangeError) {
    return new TypeError(cause.message);
  }
  // The client's decoder of a 200 answer throws plain errors for a null body or a field of
  // the wrong type; a transport failure never says this.
  if (DECODE_FAILURE.test(e.message)) {
    return new TypeError(`the API's answer could not be read: ${e.message}`);
  }
  if (grpcCode === 4) {
    return new ComputeApiError({ message: `no answer within ${budget} ms`, grpcCode });
  }
  return new ComputeApiError({ message: e.message, grpcCode });
}

/** The `message`, `status` and `errors[].reason` of an error body, when it is one. */
function payloadOf(raw: unknown): { message?: string; status?: string; reasons: string[] } {
  let json: unknown = raw;
  if (typeof raw === 'string') {
    try {
      json = JSON.parse(raw);
    } catch {
      return { reasons: [] };
    }
  }
  const error = (json as { error?: unknown } | null)?.error;
  if (error === null || typeof error !== 'object') return { reasons: [] };
  const o = error as { message?: unknown; status?: unknown; errors?: unknown };
  const reasons = Array.isArray(o.errors)
    ? o.errors
        .map((x) => (x as { reason?: unknown } | null)?.reason)
        .filter((r): r is string => typeof r === 'string')
    : [];
  return {
    ...(typeof o.message === 'string' ? { message: o.message } : {}),
    ...(typeof o.status === 'string' ? { status: o.status } : {}),
    reasons,
  };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** An instance as the provider reads it; a `TypeError` when the answer is not one. */
export function instanceView(x: unknown, zone: string | undefined, what: string): InstanceView {
  if (x === null || typeof x !== 'object')
    throw new TypeError(`${what}: the answer is not an instance`);
  const i = x as Record<string, unknown>;
  const name = str(i.name);
  const status = str(i.status);
  if (name === undefined) throw new TypeError(`${what}: the instance has no name`);
  if (status === undefined) throw new TypeError(`${what}: instance ${name} has no status`);
  const labels: Record<string, string> = {};
  if (i.labels !== undefined && i.labels !== null) {
    if (typeof i.labels !== 'object')
      throw new TypeError(`${what}: labels of ${name} are not a map`);
    for (const [k, v] of Object.entries(i.labels as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new TypeError(`${what}: label ${k} of ${name} is not text`);
      labels[k] = v;
    }
  }
  const nics = Array.isArray(i.networkInterfaces) ? i.networkInterfaces : [];
  const tags = (i.tags as { items?: unknown } | null | undefined)?.items;
  return {
    name,
    zone: str(lastSegment(str(i.zone))) ?? zone ?? '',
    status,
    labels,
    creationTimestamp: str(i.creationTimestamp),
    networkInterfaces: nics.map((n) => {
      const nic = (n ?? {}) as { networkIP?: unknown; accessConfigs?: unknown };
      const first = Array.isArray(nic.accessConfigs)
        ? (nic.accessConfigs[0] as { natIP?: unknown } | undefined)
        : undefined;
      return { networkIP: str(nic.networkIP), natIP: str(first?.natIP) };
    }),
    tags: Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [],
  };
}

/** An operation as the provider reads it; a `TypeError` when the answer is not one. */
export function operationView(x: unknown, what: string): OperationView {
  if (x === null || typeof x !== 'object')
    throw new TypeError(`${what}: the answer is not an operation`);
  const o = x as Record<string, unknown>;
  const name = str(o.name);
  const status = str(o.status);
  if (name === undefined) throw new TypeError(`${what}: the operation has no name`);
  if (status === undefined) throw new TypeError(`${what}: operation ${name} has no status`);
  const errors = ((o.error as { errors?: unknown } | null | undefined)?.errors ?? []) as unknown;
  if (!Array.isArray(errors)) throw new TypeError(`${what}: errors of ${name} are not a list`);
  const http = o.httpErrorStatusCode;
  return {
    name,
    operationType: str(o.operationType) ?? '',
    status,
    targetLink: str(o.targetLink) ?? '',
    insertTime: str(o.insertTime) ?? '',
    errors: errors.map((e) => {
      const item = (e ?? {}) as { code?: unknown; message?: unknown };
      return { code: str(item.code) ?? 'UNKNOWN', message: str(item.message) ?? '' };
    }),
    httpErrorStatusCode: typeof http === 'number' && http > 0 ? http : undefined,
  };
}

function firewallView(x: unknown): FirewallView {
  if (x === null || typeof x !== 'object')
    throw new TypeError('firewalls.get: the answer is not a rule');
  const r = x as Record<string, unknown>;
  const name = str(r.name);
  if (name === undefined) throw new TypeError('firewalls.get: the rule has no name');
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : [];
  return {
    name,
    description: typeof r.description === 'string' ? r.description : '',
    sourceRanges: strings(r.sourceRanges),
    targetTags: strings(r.targetTags),
    ports: (Array.isArray(r.allowed) ? r.allowed : []).flatMap((a) => {
      const rule = (a ?? {}) as { IPProtocol?: unknown; ports?: unknown };
      return rule.IPProtocol === 'tcp' ? strings(rule.ports) : [];
    }),
  };
}

/** Adds the instances of one scope of an aggregated listing, or notes it unreachable. */
function scopedInstances(
  scope: unknown,
  list: unknown,
  out: InstanceView[],
  unreachable: string[],
): void {
  if (typeof scope !== 'string' || list === null || typeof list !== 'object') {
    throw new TypeError('instances.aggregatedList: a scope is not a scoped list');
  }
  const l = list as { instances?: unknown; warning?: { code?: unknown } | null };
  if (l.warning?.code === 'UNREACHABLE') {
    unreachable.push(lastSegment(scope));
    return;
  }
  if (l.instances === undefined || l.instances === null) return;
  if (!Array.isArray(l.instances)) {
    throw new TypeError(`instances.aggregatedList: instances of ${scope} are not a list`);
  }
  const zone = scope.startsWith('zones/') ? lastSegment(scope) : undefined;
  for (const inst of l.instances) out.push(instanceView(inst, zone, 'instances.aggregatedList'));
}
