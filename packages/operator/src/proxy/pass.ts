/**
 * One reconcile pass over one Proxy, as named steps (the package README's
 * reconcile rules): finalize a Proxy being deleted, put the finalizer on,
 * find its provider, replace the instance when the spec changed, hold while
 * latched, ensure an instance exists, observe it (and its data plane:
 * `observe.ts`), and turn a provider error into status; with them, the
 * Create request of an instance and the deletion of the instances a
 * rotation holds beside the Proxy's own. The pass holds the object as read
 * and the status it builds; the reconciler runs the steps in order.
 *
 * @module
 */
import {
  type CreateRequest,
  errorClassOf,
  isNotFound,
  isPermanent,
  type Logger,
  type ProxyAuth,
} from '@proxy-op/contract';
import { instanceName } from '../api/naming.js';
import { FINALIZER, type ProxyObject } from '../api/proxy.js';
import { fileHash } from '../credentials/credential.js';
import {
  credentialsForPass,
  ownerOf,
  type ResolvedAuth,
  syncCredentials,
} from '../credentials/step.js';
import { clearSides, sideInstances } from '../credentials/successor.js';
import type { RunningInstance } from '../probe/types.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import { messageOf } from '../runtime/message.js';
import type { ReconcileResult } from '../runtime/queue.js';
import type { EventType } from '../store/proxies.js';
import { type RenderedSpec, renderSpec } from './cloudinit.js';
import { clearInstance, observeInstance } from './observe.js';
import { type MutableStatus, StatusDraft } from './status-draft.js';
import type { PassEnv, StepContext } from './step.js';

/** One pass over one Proxy: the object as read, the status being built, and the steps. */
export class ReconcilePass {
  readonly #env: PassEnv;
  readonly #key: string;
  readonly #obj: ProxyObject;
  readonly #status: StatusDraft;
  readonly #log: Logger;
  readonly #now: Date;
  #auth: ResolvedAuth = { mode: 'none' };

  constructor(env: PassEnv, key: string, obj: ProxyObject, log: Logger, now: Date) {
    this.#env = env;
    this.#key = key;
    this.#obj = obj;
    this.#status = new StatusDraft(env.store, key, obj, now);
    this.#log = log;
    this.#now = now;
  }

  // ---- the steps ----

  /**
   * A Proxy being deleted: deletes its instance (waiting for a `returns-early`
   * provider's Get to say NotFound), then removes the finalizer.
   */
  async finalize(): Promise<ReconcileResult> {
    const st = this.#status.st;
    const obj = this.#obj;
    if (!obj.metadata.finalizers.includes(FINALIZER)) return {};
    if (!(await this.#deleteSides())) {
      st.phase = 'Deleting';
      await this.#status.write();
      return { requeueAfter: this.#env.deletionPollMs };
    }
    if (st.providerID !== undefined) {
      const holderName = st.instanceProvider ?? obj.spec.provider;
      const cp = this.#env.providers.get(holderName);
      st.phase = 'Deleting';
      if (cp === undefined) {
        this.#status.cond(
          'ProviderConfigured',
          'False',
          'ProviderNotConfigured',
          `provider "${holderName}" holds the instance but is not configured; waiting for it to delete the instance`,
        );
        await this.#status.write();
        return {};
      }
      let gone: boolean;
      try {
        gone = await this.#deleteInstance(cp, st.providerID);
      } catch (err) {
        if (isPermanent(err)) {
          this.#log.warn(
            { providerID: st.providerID, err: messageOf(err) },
            'the recorded instance ID is refused as Permanent; counting it as nothing to delete',
          );
          gone = true;
        } else {
          st.lastError = { class: errorClassOf(err), message: messageOf(err) };
          await this.#status.write();
          throw err;
        }
      }
      if (!gone) {
        await this.#status.write();
        return { requeueAfter: this.#env.deletionPollMs };
      }
      this.#log.info({ providerID: st.providerID }, 'instance deleted; releasing the Proxy');
      this.#event('Normal', 'Deleted', `deleted instance ${st.providerID}`);
    }
    this.#env.probes?.forget(this.#key);
    await this.#env.credentials.remove(ownerOf(obj));
    await this.#env.store.removeFinalizer(this.#key, FINALIZER);
    this.#env.quota.forget(this.#key);
    return {};
  }

  /** The finalizer goes on the Proxy before anything is created for it. */
  async ensureFinalizer(): Promise<void> {
    if (!this.#obj.metadata.finalizers.includes(FINALIZER)) {
      await this.#env.store.addFinalizer(this.#key, FINALIZER);
    }
  }

  /**
   * The Proxy's provider, or undefined when none of that name is configured
   * (the Proxy then waits, with `ProviderConfigured=False`, written).
   */
  async provider(): Promise<ConfiguredProvider | undefined> {
    const name = this.#obj.spec.provider;
    const cp = this.#env.providers.get(name);
    if (cp === undefined) {
      const msg = `no provider named "${name}" is configured; waiting for the providers file to name it`;
      this.#status.cond('ProviderConfigured', 'False', 'ProviderNotConfigured', msg);
      this.#status.cond('Ready', 'False', 'ProviderNotConfigured', msg);
      if (this.#status.st.providerID === undefined) this.#status.st.phase = 'Pending';
      await this.#status.write();
      return undefined;
    }
    this.#status.cond(
      'ProviderConfigured',
      'True',
      'Configured',
      `provider ${cp.name} (${cp.type})`,
    );
    return cp;
  }

  /**
   * Renders the cloud-init and hashes the spec, once for the whole pass;
   * undefined (with `Ready=False`, `InvalidSpec`, written) for a source the
   * CRD's pattern let through but Squid could not be given.
   */
  async render(cp: ConfiguredProvider): Promise<RenderedSpec | undefined> {
    try {
      const a = this.#auth;
      return renderSpec(this.#obj.spec, a.mode === 'none' ? undefined : a, this.#ownAllow(cp));
    } catch (err) {
      this.#status.cond('Ready', 'False', 'InvalidSpec', `spec: ${(err as Error).message}`);
      await this.#status.write();
      return undefined;
    }
  }

  /**
   * Resolves the Proxy's credentials for the pass (`credentials/step.ts`): a
   * result when it cannot go on (a `secretRef` that cannot be used: status
   * written, looked at again after the provisioning poll).
   */
  async credentials(cp: ConfiguredProvider): Promise<ReconcileResult | undefined> {
    const resolved = await credentialsForPass(this.#context(), cp);
    if (resolved === undefined) {
      await this.#status.write();
      return { requeueAfter: this.#env.provisioningPollMs };
    }
    this.#auth = resolved;
    return undefined;
  }

  /**
   * Replaces the instance when the spec changed under it: deletes it (a
   * result while the deletion is under way, or while its provider is gone)
   * and clears it from the status, so the next step creates the new one.
   */
  async replace(cp: ConfiguredProvider, hash: string): Promise<ReconcileResult | undefined> {
    const st = this.#status.st;
    if (st.providerID === undefined || st.specHash === undefined || st.specHash === hash) {
      return undefined;
    }
    const holder = this.#holder(cp);
    if (holder === undefined) {
      this.#status.cond(
        'Ready',
        'False',
        'ProviderNotConfigured',
        `provider ${st.instanceProvider} is gone`,
      );
      await this.#status.write();
      return {};
    }
    if (st.phase !== 'Replacing') {
      this.#event('Normal', 'Replacing', `the spec changed; replacing instance ${st.providerID}`);
    }
    st.phase = 'Replacing';
    this.#status.cond('Ready', 'False', 'Replacing', 'the spec changed; replacing the instance');
    if (!(await this.#deleteSides()) || !(await this.#deleteInstance(holder, st.providerID))) {
      await this.#status.write();
      return { requeueAfter: this.#env.deletionPollMs };
    }
    this.#log.info({ providerID: st.providerID }, 'old instance deleted for the new spec');
    clearInstance(this.#step());
    await this.#status.save();
    return undefined;
  }

  /**
   * True when a Permanent error latched this spec hash (the status written):
   * nothing more until the spec changes. A latch of another hash is lifted.
   */
  async latched(hash: string): Promise<boolean> {
    const st = this.#status.st;
    if (st.latchedSpecHash === hash) {
      await this.#status.write();
      return true;
    }
    if (st.latchedSpecHash !== undefined) {
      delete st.latchedSpecHash;
      this.#status.cond('Latched', 'False', 'SpecChanged', 'the spec changed; trying again');
    }
    return false;
  }

  /**
   * Creates the instance when there is none, and records its ID and the hash
   * at once. Resolves with the instance's ID.
   */
  async ensureInstance(cp: ConfiguredProvider, spec: RenderedSpec): Promise<string> {
    const st = this.#status.st;
    if (st.providerID !== undefined) {
      st.specHash ??= spec.hash;
      st.instanceProvider ??= cp.name;
      return st.providerID;
    }
    if (st.phase !== 'Replacing') st.phase = 'Provisioning';
    const md = this.#obj.metadata;
    const name = instanceName(md.namespace, md.name, st.credentials?.slot === 1 ? 1 : 0);
    const auth = this.#auth.mode === 'none' ? undefined : this.#auth.auth;
    const id = await this.#env.call((o) => cp.provider.create(this.#request(name, spec, auth), o));
    st.providerID = id;
    st.instanceProvider = cp.name;
    st.specHash = spec.hash;
    if (this.#auth.mode !== 'none') {
      st.credentials = { ...st.credentials, appliedHash: fileHash(this.#auth.auth.passwordFile) };
    }
    await this.#status.save();
    this.#log.info({ providerID: id }, 'instance created');
    this.#event('Normal', 'Created', `created instance ${id} on provider ${cp.name}`);
    return id;
  }

  /** Gets the instance and sets the status from it (`observe.ts`). */
  observe(cp: ConfiguredProvider, providerID: string): Promise<ReconcileResult> {
    return observeInstance(this.#step(), cp, providerID);
  }

  /**
   * A provider error of the steps above, into status (below):
   * Permanent latches the spec hash, QuotaExceeded waits out its own
   * backoff, anything else is rethrown for the queue's backoff.
   */
  fail(err: unknown, hash: string): Promise<ReconcileResult> {
    return failPass(this.#step(), err, hash);
  }

  // ---- helpers ----

  /** `credentials/step.ts`'s sync for the Running instance on `holder`. */
  async #syncCredentials(
    holder: ConfiguredProvider,
    instance: RunningInstance,
  ): Promise<number | undefined> {
    const a = this.#auth;
    if (a.mode === 'none') return undefined;
    const probes = this.#env.probes;
    return syncCredentials(this.#context(), a, {
      cp: holder,
      providerID: instance.providerID,
      endpoint: instance.endpoint,
      call: (fn) => this.#env.call(fn),
      verify: (cred) => probes?.verify(holder, instance, cred) ?? Promise.resolve(true),
      replace: {
        create: (name, auth) => {
          const spec = renderSpec(
            this.#obj.spec,
            { auth, hashInput: a.hashInput },
            this.#ownAllow(holder),
          );
          return this.#env.call((o) => holder.provider.create(this.#request(name, spec, auth), o));
        },
        providerNamed: (name) => this.#env.providers.get(name),
        deleteInstance: (cp, id) => this.#deleteInstance(cp, id),
        verifyAt: (cp, at, cred) => probes?.verify(cp, at, cred) ?? Promise.resolve(true),
        forgetProbes: () => probes?.forget(this.#key),
        event: (type, reason, message) => this.#event(type, reason, message),
        provisioningPollMs: this.#env.provisioningPollMs,
        deletionPollMs: this.#env.deletionPollMs,
      },
    });
  }

  /** What the credential steps work with. */
  #context() {
    return { obj: this.#obj, status: this.#status, store: this.#env.credentials, now: this.#now };
  }

  /** What a step in a room of its own works with. */
  #step(): StepContext {
    const a = this.#auth;
    return {
      env: this.#env,
      key: this.#key,
      obj: this.#obj,
      status: this.#status,
      log: this.#log,
      credentials: a.mode === 'none' ? undefined : a.record.current,
      syncCredentials: (cp, instance) => this.#syncCredentials(cp, instance),
      event: (type, reason, message) => this.#event(type, reason, message),
      deleteInstance: (cp, id) => this.#deleteInstance(cp, id),
    };
  }

  /** The Create request of an instance of this Proxy named `name`. */
  #request(name: string, spec: RenderedSpec, auth: ProxyAuth | undefined) {
    return createRequestOf(this.#obj, this.#env.providers.installation, name, spec, auth);
  }

  /**
   * The operator's own destinations a proxy on `cp` must reach whatever its
   * policy refuses: where its probes go (`host:port` of both probe URLs).
   */
  #ownAllow(cp: ConfiguredProvider): string[] {
    const target = this.#env.probes?.targetFor(cp);
    if (target === undefined) return [];
    const entries = [target.get, target.connect]
      .filter((u): u is URL => u !== undefined)
      .map((u) => {
        const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : '80';
        return `${u.hostname}:${port}`;
      });
    return [...new Set(entries)];
  }

  /** Deletes a rotation's successor and retiring instance; true once none is left. */
  #deleteSides(): Promise<boolean> {
    const st = this.#status.st;
    return deleteSideInstances(
      st,
      st.instanceProvider ?? this.#obj.spec.provider,
      this.#env.providers,
      (cp, id) => this.#deleteInstance(cp, id),
    );
  }

  #event(type: EventType, reason: string, message: string): void {
    this.#env.store.recordEvent?.(this.#key, type, reason, message);
  }

  /** The provider that holds the recorded instance: `current`, or the one the status names. */
  #holder(current: ConfiguredProvider): ConfiguredProvider | undefined {
    const name = this.#status.st.instanceProvider;
    if (name === undefined || name === current.name) return current;
    return this.#env.providers.get(name);
  }

  /**
   * Deletes the Proxy's instance; true when it is gone (for `returns-early`
   * providers, once Get says NotFound). The Proxy's UID goes with it, so an
   * instance another Proxy took the name of is left alone.
   */
  async #deleteInstance(cp: ConfiguredProvider, id: string): Promise<boolean> {
    const uid = this.#obj.metadata.uid;
    try {
      await this.#env.call((o) => cp.provider.delete(id, { ...o, uid }));
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
    if (cp.module.profile.deleteReturn !== 'returns-early') return true;
    try {
      await this.#env.call((o) => cp.provider.get(id, o));
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }
}

/**
 * A provider error of the steps above, into status: Permanent latches the
 * spec hash, QuotaExceeded waits out its own backoff, anything else is
 * rethrown for the queue's backoff.
 */
async function failPass(c: StepContext, err: unknown, hash: string): Promise<ReconcileResult> {
  const st = c.status.st;
  const cls = errorClassOf(err);
  const message = messageOf(err);
  st.lastError = { class: cls, message };
  if (cls === 'Permanent') {
    st.latchedSpecHash = hash;
    st.phase = 'Failed';
    c.status.cond('Latched', 'True', 'PermanentError', message);
    c.status.cond('Ready', 'False', 'PermanentError', message);
    await c.status.write();
    c.log.warn({ err: message }, 'permanent provider error; latched until the spec changes');
    c.event(
      'Warning',
      'Latched',
      `permanent provider error, nothing more is tried until the spec changes: ${message}`,
    );
    return {};
  }
  if (cls === 'QuotaExceeded') {
    c.status.cond('QuotaExceeded', 'True', 'QuotaExceeded', message);
    c.status.cond('Ready', 'False', 'QuotaExceeded', message);
    await c.status.write();
    const ms = c.env.quota.next(c.key);
    c.log.info({ err: message, retryInMs: ms }, 'provider quota exceeded; retrying later');
    return { requeueAfter: ms };
  }
  await c.status.write();
  throw err;
}

/** The Create request of an instance named `name` for the Proxy `obj`. */
function createRequestOf(
  obj: ProxyObject,
  installation: string,
  name: string,
  spec: RenderedSpec,
  auth: ProxyAuth | undefined,
): CreateRequest {
  const { metadata: md, spec: s } = obj;
  return {
    name,
    namespace: md.namespace,
    uid: md.uid,
    port: s.port,
    cloudInit: new TextEncoder().encode(spec.cloudInit),
    placement: s.placement,
    allowedSources: s.allowedSources,
    installation,
    auth,
    ...(spec.egress === undefined ? {} : { egress: spec.egress }),
  };
}

/**
 * Deletes a rotation's successor and retiring instance (`credentials/successor.ts`);
 * true once both are gone (then forgotten), false while a deletion is under
 * way or the provider of one is not configured.
 */
async function deleteSideInstances(
  st: MutableStatus,
  holder: string,
  providers: ProviderSet,
  del: (cp: ConfiguredProvider, id: string) => Promise<boolean>,
): Promise<boolean> {
  let gone = true;
  for (const side of sideInstances(st, holder)) {
    const cp = providers.get(side.provider);
    if (cp === undefined || !(await del(cp, side.providerID))) gone = false;
  }
  if (gone) clearSides(st);
  return gone;
}
