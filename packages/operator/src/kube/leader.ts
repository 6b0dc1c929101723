/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
 * rules: a Lease held by another replica is taken only once it has not
 * changed for its whole duration as seen from here (so clocks need not
 * agree); the leader renews every retry period and gives up leading when it
 * could not renew within the renew deadline, which is shorter than the lease
 * duration, so it stops before anyone else may start; on shutdown the Lease
 * is released and another replica takes over at its next try.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import { DEFAULTS } from '../defaults.js';
import { messageOf } from '../runtime/message.js';
import { sleep } from '../runtime/sleep.js';
import { isStatus, KubeApiError, type KubeClient } from './client.js';

/** The timings of leader election, in milliseconds (client-go's defaults). */
export const LEADER_ELECTION_DEFAULTS = {
  leaseDurationMs: DEFAULTS.leaseDurationMs,
  renewDeadlineMs: DEFAULTS.renewDeadlineMs,
  retryPeriodMs: DEFAULTS.retryPeriodMs,
} as const;

/** Options of {@link LeaderElector}. */
export interface LeaderElectionOptions {
  /** The client the Lease is read and written with. */
  readonly client: KubeClient;
  /** The Lease's namespace. */
  readonly namespace: string;
  /** The Lease's name (default `proxy-op`). */
  readonly name?: string | undefined;
  /** This replica's identity, unique among the replicas (the Pod name and a random suffix). */
  readonly identity: string;
  /** How long a Lease stays held without renewal (default 15000). */
  readonly leaseDurationMs?: number | undefined;
  /** The leader gives up when it could not renew for this long (default 10000; less than the duration). */
  readonly renewDeadlineMs?: number | undefined;
  /** How often to try to take or renew the Lease (default 2000). */
  readonly retryPeriodMs?: number | undefined;
  /** Where taking and losing the Lease is logged; silent when omitted. */
  readonly logger?: Logger | undefined;
}

/**
 * A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional
 * digits, as the API server requires for `acquireTime` and `renewTime`
 * (a JavaScript date has milliseconds, so the last three digits are 0).
 */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion: string };
  spec?: LeaseSpec;
}

/**
 * One replica's side of leader election. `acquire` waits until this replica
 * holds the Lease; `lost` then resolves when it stops holding it (renewal
 * failed past the deadline), after which the caller must stop reconciling at
 * once; `release` gives the Lease up at shutdown.
 */
export class LeaderElector {
  /** The Lease's name. */
  readonly name: string;
  /** This replica's identity. */
  readonly identity: string;
  /** Resolves with the reason when leadership is lost (never while renewals succeed). */
  readonly lost: Promise<Error>;
  readonly #client: KubeClient;
  readonly #namespace: string;
  readonly #durationMs: number;
  readonly #deadlineMs: number;
  readonly #retryMs: number;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  #setLost: (e: Error) => void = () => {};
  /** Our last copy of the Lease (after our own write, or a read). */
  #lease: Lease | undefined;
  /** When (monotonic ms) we last saw the Lease's record change, and its resourceVersion. */
  #observed: { rv: string; at: number } | undefined;
  #leading = false;
  #renewing: Promise<void> | undefined;
  #holder: string | undefined;

  constructor(opts: LeaderElectionOptions) {
    this.#client = opts.client;
    this.#namespace = opts.namespace;
    this.name = opts.name ?? DEFAULTS.leaderElectionId;
    this.identity = opts.identity;
    this.#durationMs = opts.leaseDurationMs ?? LEADER_ELECTION_DEFAULTS.leaseDurationMs;
    this.#deadlineMs = opts.renewDeadlineMs ?? LEADER_ELECTION_DEFAULTS.renewDeadlineMs;
    this.#retryMs = opts.retryPeriodMs ?? LEADER_ELECTION_DEFAULTS.retryPeriodMs;
    if (
      !(
        this.#retryMs > 0 &&
        this.#deadlineMs > this.#retryMs &&
        this.#durationMs > this.#deadlineMs
      )
    ) {
      throw new RangeError(
        'leader election: need 0 < retry period < renew deadline < lease duration',
      );
    }
    this.#log = (opts.logger ?? silentLogger).child({
      lease: `${this.#namespace}/${this.name}`,
      identity: this.identity,
    });
    this.lost = new Promise((r) => {
      this.#setLost = r;
    });
  }

  /** True while this replica holds the Lease. */
  get leading(): boolean {
    return this.#leading;
  }

  /**
   * Who holds the Lease as last read or written here (this replica's
   * identity while it leads); undefined before the first try, or when it is
   * free.
   */
  get holder(): string | undefined {
    return this.#holder;
  }

  get #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.#namespace}/leases/${this.name}`;
  }

  /**
   * Tries to take (or renew) the Lease once; true when this replica holds it
   * afterwards. `signal` bounds the requests.
   */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = new Date();
    const mono = performance.now();
    let lease = this.#leading ? this.#lease : undefined;
    if (lease === undefined) {
      try {
        lease = await this.#client.request<Lease>({
          operation: `reading the leader election Lease ${this.#namespace}/${this.name}`,
          method: 'GET',
          path: this.#path,
          signal,
        });
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
        const created = await this.#client.request<Lease>({
          operation: `creating the leader election Lease ${this.#namespace}/${this.name}`,
          method: 'POST',
          path: `/apis/coordination.k8s.io/v1/namespaces/${this.#namespace}/leases`,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.name, namespace: this.#namespace },
            spec: this.#spec(now, now, 0),
          },
          signal,
        });
        this.#took(created, mono);
        return true;
      }
      if (this.#observed?.rv !== lease.metadata.resourceVersion) {
        this.#observed = { rv: lease.metadata.resourceVersion, at: mono };
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    this.#holder = holder === '' ? undefined : holder;
    const ours = holder === this.identity;
    if (holder !== '' && !ours) {
      const duration = (spec.leaseDurationSeconds ?? this.#durationMs / 1000) * 1000;
      if ((this.#observed?.at ?? mono) + duration > mono) return false;
    }
    const acquired = ours && spec.acquireTime !== undefined ? new Date(spec.acquireTime) : now;
    const transitions = (spec.leaseTransitions ?? 0) + (ours ? 0 : 1);
    try {
      const written = await this.#put(
        ours ? 'renewing' : 'taking',
        lease,
        this.#spec(acquired, now, transitions),
        signal,
      );
      this.#took(written, mono);
      return true;
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      // Someone else wrote it first: read it again next time.
      this.#lease = undefined;
      return false;
    }
  }

  /** Replaces the Lease read as `lease` (a 409 when someone wrote it since). */
  #put(verb: string, lease: Lease, spec: LeaseSpec, signal: AbortSignal): Promise<Lease> {
    return this.#client.request<Lease>({
      operation: `${verb} the leader election Lease ${this.#namespace}/${this.name}`,
      method: 'PUT',
      path: this.#path,
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: this.name,
          namespace: this.#namespace,
          resourceVersion: lease.metadata.resourceVersion,
        },
        spec,
      },
      signal,
    });
  }

  #spec(acquired: Date, renewed: Date, transitions: number): LeaseSpec {
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#durationMs / 1000),
      acquireTime: microTime(acquired),
      renewTime: microTime(renewed),
      leaseTransitions: transitions,
    };
  }

  #took(lease: Lease, mono: number): void {
    this.#lease = lease;
    this.#holder = this.identity;
    this.#observed = { rv: lease.metadata.resourceVersion, at: mono };
  }

  /**
   * Resolves once this replica holds the Lease, trying every retry period
   * (with up to 20% jitter); rejects with `signal.reason` when aborted. Then
   * renews it every retry period until {@link LeaderElector.release}, or until a renewal
   * cannot be made within the renew deadline ({@link LeaderElector.lost} resolves).
   */
  async acquire(signal: AbortSignal): Promise<void> {
    if (this.#leading) return;
    let waitingLogged = false;
    for (;;) {
      signal.throwIfAborted();
      try {
        if (await this.#tryAcquireOrRenew(AbortSignal.any([signal, this.#stop.signal]))) break;
        if (!waitingLogged) {
          waitingLogged = true;
          this.#log.info(
            { holder: this.#holder ?? '' },
            'another replica leads; waiting for the Lease',
          );
        }
      } catch (err) {
        signal.throwIfAborted();
        this.#log.error({ err: messageOf(err) }, 'leader election: cannot take the Lease');
      }
      await sleep(this.#retryMs * (1 + Math.random() * 0.2), signal);
    }
    this.#leading = true;
    this.#log.info({}, 'became the leader');
    this.#renewing = this.#renewLoop();
  }

  async #renewLoop(): Promise<void> {
    let last = performance.now();
    let lastError = '';
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      try {
        await sleep(this.#retryMs, stop);
      } catch {
        return;
      }
      const left = Math.ceil(this.#deadlineMs - (performance.now() - last));
      try {
        // Bounded by the deadline only: a renewal in flight when release() is called
        // finishes, so the release writes on top of it.
        if (await this.#tryAcquireOrRenew(AbortSignal.timeout(Math.max(1, left)))) {
          last = performance.now();
          continue;
        }
        lastError = `the Lease is held by ${this.#lease?.spec?.holderIdentity ?? 'another replica'}`;
      } catch (err) {
        if (stop.aborted) return;
        lastError = KubeApiError.isInstance(err) ? err.message : messageOf(err);
        this.#log.warn({ err: lastError }, 'leader election: renewing the Lease failed');
      }
      if (performance.now() - last >= this.#deadlineMs) {
        this.#leading = false;
        const reason = new Error(
          `leadership lost: the Lease was not renewed within ${this.#deadlineMs} ms (${lastError})`,
        );
        this.#log.error({ err: reason.message }, 'leadership lost');
        this.#setLost(reason);
        return;
      }
    }
  }

  /**
   * Stops renewing and, when this replica holds the Lease, releases it (no
   * holder, a one-second duration) so another replica takes it at its next
   * try. Failures are logged: the Lease then simply expires.
   */
  async release(): Promise<void> {
    this.#stop.abort(new Error('leader election stopped'));
    await this.#renewing;
    if (!this.#leading || this.#lease === undefined) return;
    this.#leading = false;
    let lease: Lease | undefined = this.#lease;
    const signal = AbortSignal.timeout(this.#deadlineMs);
    try {
      for (let attempt = 0; attempt < 3 && lease !== undefined; attempt++) {
        const now = new Date();
        try {
          await this.#put(
            'releasing',
            lease,
            {
              leaseDurationSeconds: 1,
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: lease.spec?.leaseTransitions ?? 0,
            },
            signal,
          );
          this.#holder = undefined;
          this.#log.info({}, 'released the Lease');
          return;
        } catch (err) {
          if (!isStatus(err, 409)) throw err;
          // Our copy is stale: release what is there only if it is still ours.
          const now: Lease = await this.#client.request<Lease>({
            operation: `reading the leader election Lease ${this.#namespace}/${this.name}`,
            method: 'GET',
            path: this.#path,
            signal,
          });
          lease = now.spec?.holderIdentity === this.identity ? now : undefined;
        }
      }
    } catch (err) {
      this.#log.warn({ err: messageOf(err) }, 'releasing the Lease failed; it will expire');
    }
  }
}
