/**
 * The production seam: `@google-cloud/compute` over its REST transport.
 * The SDK is loaded, and each of its clients built, on the first call that
 * needs it, so building a provider costs nothing and touches no network.
 * Every call runs under the signal the decorated seam hands it (the
 * caller's, joined with the call's budget from `timeouts`: see `seam.ts`),
 * which aborts the HTTP request; waiting for what cannot be cancelled (the
 * SDK loading, the credentials, the token) ends when it fires. The SDK
 * makes no retries of its own (the operator retries), and its errors
 * become the provider's (`translate.ts`).
 *
 * @module
 */
import { abortable, type SecretSet } from '@proxy-op/contract';
import {
  firewallView,
  type InstanceView,
  instanceView,
  type ListedInstances,
  operationView,
  scopedInstances,
} from './answers.js';
import { type GcpAuth, loadAuth, readToken } from './auth.js';
import { endpointParts, type GcpConfig } from './config.js';
import { ComputeApiError } from './errors.js';
import { type ComputeSeam, callBudget, type FirewallBody, type SeamCall } from './seam.js';
import { translate } from './translate.js';

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

type Sdk = typeof import('@google-cloud/compute');
type CallOptions = { signal?: AbortSignal; timeout: number; retry: null };
type ClientOptions = NonNullable<ConstructorParameters<Sdk['InstancesClient']>[0]>;
type Closable = { close(): Promise<void> };

/** Builds the production seam over `@google-cloud/compute`. Makes no call and loads nothing yet. */
export function createComputeAdapter(o: ComputeAdapterOptions): ComputeAdapter {
  const { config, secrets } = o;
  const project = config.project;
  const { host, port, protocol } = endpointParts(config.endpoint);
  let sdk: Promise<Sdk> | undefined;
  let auth: Promise<GcpAuth> | undefined;
  const clients = new Map<string, Promise<Closable>>();
  let closed = false;

  const credentials = (): Promise<GcpAuth> => {
    auth ??= loadAuth(o.auth, config.credentialsFile);
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
        const [s, a] = await Promise.all([sdk, credentials()]);
        const clientAuth = ('getClient' in a
          ? { auth: a }
          : { authClient: a }) as unknown as Partial<ClientOptions>;
        return make(s, {
          apiEndpoint: host,
          port,
          protocol,
          fallback: true,
          ...clientAuth,
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

  /**
   * Runs one SDK call of seam method `method`: the token read (declared
   * secret), the client built if need be, then the call with the signal.
   * The client's own deadline is the call's budget too, so it never cuts a
   * call short of its budget (its default is 600 s); the budget's timer
   * starts first and fires first.
   */
  async function call<C, T>(
    method: SeamCall,
    signal: AbortSignal | undefined,
    kind: () => Promise<C>,
    run: (c: C, opts: CallOptions) => Promise<T>,
  ): Promise<T> {
    const budget = callBudget(config.timeouts, method);
    await readToken(await abortable(credentials(), signal), signal, secrets);
    signal?.throwIfAborted();
    const opts: CallOptions = {
      ...(signal === undefined ? {} : { signal }),
      timeout: budget,
      retry: null,
    };
    // Loading the SDK takes seconds the first time: a cancelled call does not wait for it.
    const c = await abortable(kind(), signal);
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
      if (ComputeApiError.isInstance(err) && err.httpStatus === 404) return undefined;
      throw err;
    }
  }

  const seam: ComputeSeam = {
    getInstance: (zone, name, signal) =>
      orMissing(
        call('getInstance', signal, instances, async (c, opts) => {
          const [inst] = await c.get({ project, zone, instance: name }, opts);
          return instanceView(inst, zone, 'instances.get');
        }),
      ),
    insertInstance: (zone, body, signal) =>
      call('insertInstance', signal, instances, async (c, opts) => {
        const [lro] = await c.insert(
          { project, zone, instanceResource: body as unknown as Record<string, unknown> },
          opts,
        );
        return operationView(lro.latestResponse, 'instances.insert');
      }),
    deleteInstance: (zone, name, signal) =>
      orMissing(
        call('deleteInstance', signal, instances, async (c, opts) => {
          const [lro] = await c.delete({ project, zone, instance: name }, opts);
          return operationView(lro.latestResponse, 'instances.delete');
        }),
      ),
    listInstances: (filter, signal) =>
      call('listInstances', signal, listing, async (c, opts) => {
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
      call('probeInstances', signal, listing, async (c, opts) => {
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
      call('listInstanceOperations', signal, zoneOps, async (c, opts) => {
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
        call('deleteOperation', signal, zoneOps, async (c, opts) => {
          await c.delete({ project, zone, operation: name }, opts);
        }),
      );
    },
    getFirewall: (name, signal) =>
      orMissing(
        call('getFirewall', signal, firewalls, async (c, opts) => {
          const [rule] = await c.get({ project, firewall: name }, opts);
          return firewallView(rule);
        }),
      ),
    insertFirewall: (body: FirewallBody, signal) =>
      call('insertFirewall', signal, firewalls, async (c, opts) => {
        const [lro] = await c.insert(
          { project, firewallResource: body as unknown as Record<string, unknown> },
          opts,
        );
        return operationView(lro.latestResponse, 'firewalls.insert');
      }),
    deleteFirewall: (name, signal) =>
      orMissing(
        call('deleteFirewall', signal, firewalls, async (c, opts) => {
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
