/**
 * The reference provider's backend: an in-memory hypervisor with the
 * behaviours real ones have (locks, seed volumes that outlive their VM,
 * deletes that take time, unknown states, refused credentials echoed back,
 * calls that hang, calls carried out after their caller left, answers that
 * cannot be read, running out of capacity), reached only through the seam
 * {@link MemorySeam}. A running VM runs a simulated proxy that loads the
 * VM's password file when it starts and again a moment after the file is
 * written, as a proxy re-reading its file does, and holds requests to the
 * VM's destination policy (this host and private networks refused unless
 * the policy allows them, as the real proxies do).
 *
 * @module
 */

import type { EgressPolicy } from '@proxy-op/egress';
import { abortable, createGate, type HarnessGate } from '../gate.js';
import type { Gate } from '../harness.js';
import { loadedFile, proxyAnswer } from './proxy.js';

/** A failure as the in-memory backend reports it: a code and a body. */
export class BackendError extends Error {
  constructor(
    /** The backend's status code for the failure. */
    readonly status:
      | 'NO_SUCH_VM'
      | 'VM_EXISTS'
      | 'LOCKED'
      | 'UNREACHABLE'
      | 'UNAUTHORIZED'
      | 'FORBIDDEN'
      | 'NO_CAPACITY'
      | 'INVALID'
      | 'WRONG_STATE',
    /** The answer's body, as a careless server would send it: may echo the request. */
    readonly body: string,
  ) {
    super(`${status}: ${body}`);
  }
  /** Always `BackendError`. */
  override get name(): string {
    return 'BackendError';
  }
}

/** A VM as the backend stores it. */
export interface VmRecord {
  /** The VM's name, unique on the backend. */
  readonly name: string;
  /** `defined` = created, never started. `unknown` = a state the provider has no mapping for. */
  readonly status: 'defined' | 'running' | 'stopped' | 'unknown';
  /** Its address, while it runs. */
  readonly ip?: string | undefined;
  /** Key/value metadata, written in the same call that defines the VM. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The seed volume the VM boots its cloud-init from. */
  readonly seed?: string | undefined;
  /** Set while a task or lock holds the VM. */
  readonly lock?: string | undefined;
  /** The password file in the VM's filesystem; without one its proxy serves its sources alone. */
  readonly passwordFile?: Uint8Array | undefined;
  /** The password file the VM's proxy had loaded before `passwordFile` was last written. */
  readonly proxyFile?: Uint8Array | undefined;
  /** When (ms since the epoch) the proxy loads `passwordFile` again, after it was written. */
  readonly proxyReloadAt?: number | undefined;
  /** The destination policy in the VM's proxy config; the proxy's defaults when unset. */
  readonly egress?: EgressPolicy | undefined;
  /** The zone the VM was defined in (unset for a VM planted without one). */
  readonly zone?: string | undefined;
  /** The IPv6 range routed to the VM while it runs. */
  readonly ipv6Range?: string | undefined;
  /** Set when the backend took the VM back (stopped it to reclaim capacity), until it starts again. */
  readonly reclaimed?: boolean | undefined;
}

/** What `define` makes: the VM's metadata, the seed volume it boots from, its zone. */
export interface VmSpec {
  /** Key/value metadata: the ownership mark. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The seed volume the VM boots its cloud-init from. */
  readonly seed: string;
  /** The zone the VM goes to. */
  readonly zone: string;
}

/** The backend calls the reference provider makes; one method per call, each taking a signal. */
export interface MemorySeam {
  /** Answers for one zone (a Checker target) with the backend's version. */
  ping(target: string, signal?: AbortSignal): Promise<{ version: string }>;
  /** The VM named `name`, or undefined. */
  lookup(name: string, signal?: AbortSignal): Promise<VmRecord | undefined>;
  /** Writes (or overwrites) a seed volume. */
  putSeed(volume: string, userData: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** Deletes a seed volume; deleting what is gone succeeds. */
  deleteSeed(volume: string, signal?: AbortSignal): Promise<void>;
  /**
   * Defines a VM with its metadata in a zone, booting from the seed volume `spec.seed`;
   * `VM_EXISTS` if the name is taken, `NO_CAPACITY` when full.
   */
  define(name: string, spec: VmSpec, signal?: AbortSignal): Promise<void>;
  /** Writes the password file in a VM's filesystem; its proxy loads it again a moment later. */
  putPasswordFile(name: string, contents: Uint8Array, signal?: AbortSignal): Promise<void>;
  /**
   * Writes the destination policy in a VM's proxy config (undefined: the
   * proxy's defaults); its proxy holds requests to it from then on.
   */
  putEgressPolicy(
    name: string,
    policy: EgressPolicy | undefined,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Starts a VM that is not running; it gets an address and an IPv6 range. */
  start(name: string, signal?: AbortSignal): Promise<void>;
  /** Stops a running VM. */
  stop(name: string, signal?: AbortSignal): Promise<void>;
  /** Removes a VM that is not running. */
  destroy(name: string, signal?: AbortSignal): Promise<void>;
  /** Every VM on the backend. */
  list(signal?: AbortSignal): Promise<VmRecord[]>;
}

/**
 * The in-memory backend and its controls. The seam methods are what the
 * provider may call; everything else is for the harness.
 */
export class MemoryBackend {
  /** The VMs by name. */
  readonly vms = new Map<string, VmRecord>();
  /** Seed volumes by name, with their size in bytes. */
  readonly seeds = new Map<string, number>();
  /** Every seam call, in order. */
  readonly calls: string[] = [];
  /** The credential the backend accepts. */
  token: string;
  private capacity = Number.POSITIVE_INFINITY;
  private malformedNext = false;
  private unreachable = new Set<string>();
  private pingFailure: BackendError['status'] | undefined;
  private delays = new Map<string, number>();
  private blocker: { skip: number; gate: HarnessGate } | undefined;
  private deleteHolds = new Map<string, HarnessGate>();
  private nextIp = 10;
  private readonly reloadMs: number;

  /**
   * `reloadMs`: how long after its password file is written a running VM's
   * proxy loads it (20 ms by default).
   */
  constructor(opts: { token: string; reloadMs?: number | undefined }) {
    this.token = opts.token;
    this.reloadMs = opts.reloadMs ?? 20;
  }

  /**
   * The seam over this backend, as a provider sees it. `credential` is
   * read for every call, as a provider reads a mounted token file.
   */
  seam(credential: () => string): MemorySeam {
    return {
      ping: (target, signal) =>
        this.call('ping', credential, signal, async () => {
          const delay = this.delays.get(target);
          if (delay !== undefined)
            await abortable(new Promise((r) => setTimeout(r, delay)), signal);
          if (this.unreachable.has(target) || this.unreachable.has('*')) {
            throw new BackendError('UNREACHABLE', `connect ECONNREFUSED ${target}`);
          }
          if (this.pingFailure !== undefined) {
            throw new BackendError(this.pingFailure, `ping of ${target} refused`);
          }
          return { version: 'memory/1.0' };
        }),
      lookup: (name, signal) => this.call('lookup', credential, signal, () => this.vms.get(name)),
      putSeed: (volume, userData, signal) =>
        this.call('putSeed', credential, signal, () => {
          this.seeds.set(volume, userData.byteLength);
        }),
      deleteSeed: (volume, signal) =>
        this.call('deleteSeed', credential, signal, () => {
          this.seeds.delete(volume);
        }),
      define: (name, spec, signal) =>
        this.call('define', credential, signal, () => {
          if (this.vms.has(name)) throw new BackendError('VM_EXISTS', `VM ${name} already exists`);
          if (!this.seeds.has(spec.seed))
            throw new BackendError('INVALID', `no volume ${spec.seed}`);
          if (this.vms.size >= this.capacity) {
            throw new BackendError('NO_CAPACITY', `no room for ${name}: ${this.vms.size} VMs`);
          }
          this.vms.set(name, {
            name,
            status: 'defined',
            metadata: { ...spec.metadata },
            seed: spec.seed,
            zone: spec.zone,
          });
        }),
      putPasswordFile: (name, contents, signal) =>
        this.call('putPasswordFile', credential, signal, () => {
          const vm = this.mustGet(name);
          const now = Date.now();
          this.vms.set(name, {
            ...vm,
            passwordFile: Uint8Array.from(contents),
            // Until it reloads, the proxy keeps the file it has now.
            proxyFile: loadedFile(vm, now),
            proxyReloadAt: now + this.reloadMs,
          });
        }),
      putEgressPolicy: (name, policy, signal) =>
        this.call('putEgressPolicy', credential, signal, () => {
          const { egress: _old, ...vm } = this.mustGet(name);
          this.vms.set(name, policy === undefined ? vm : { ...vm, egress: policy });
        }),
      start: (name, signal) =>
        this.call('start', credential, signal, () => {
          const vm = this.mustGet(name);
          if (vm.lock) throw new BackendError('LOCKED', `VM ${name} is locked (${vm.lock})`);
          if (vm.status === 'running') {
            throw new BackendError('WRONG_STATE', `VM ${name} is already running`);
          }
          const n = this.nextIp++;
          const { reclaimed: _reclaimed, ...rest } = vm;
          this.vms.set(name, {
            ...rest,
            status: 'running',
            ip: `10.0.0.${n}`,
            ipv6Range: `2001:db8:${n.toString(16)}::/64`,
            proxyFile: vm.passwordFile,
          });
        }),
      stop: (name, signal) =>
        this.call('stop', credential, signal, () => {
          const vm = this.mustGet(name);
          if (vm.lock) throw new BackendError('LOCKED', `VM ${name} is locked (${vm.lock})`);
          if (vm.status !== 'running') {
            throw new BackendError('WRONG_STATE', `VM ${name} is not running`);
          }
          const { ip: _ip, ipv6Range: _range, ...rest } = vm;
          this.vms.set(name, { ...rest, status: 'stopped' });
        }),
      destroy: async (name, signal) => {
        const hold = this.deleteHolds.get(name);
        await this.call('destroy', credential, signal, async () => {
          const vm = this.mustGet(name);
          if (vm.lock) throw new BackendError('LOCKED', `VM ${name} is locked (${vm.lock})`);
          if (vm.status === 'running') {
            throw new BackendError('WRONG_STATE', `VM ${name} is running; stop it first`);
          }
          if (hold !== undefined) {
            this.deleteHolds.delete(name);
            await hold.hold();
          }
          this.vms.delete(name);
        });
      },
      list: (signal) => this.call('list', credential, signal, () => [...this.vms.values()]),
    };
  }

  private mustGet(name: string): VmRecord {
    const vm = this.vms.get(name);
    if (vm === undefined) throw new BackendError('NO_SUCH_VM', `VM ${name} does not exist`);
    return vm;
  }

  private async call<T>(
    what: string,
    credential: () => string,
    signal: AbortSignal | undefined,
    fn: () => T | Promise<T>,
  ): Promise<T> {
    this.calls.push(what);
    const presented = credential();
    if (presented !== this.token) {
      throw new BackendError('UNAUTHORIZED', `invalid token '${presented}'`);
    }
    if (this.malformedNext) {
      this.malformedNext = false;
      return {} as T;
    }
    const b = this.blocker;
    if (b !== undefined) {
      if (b.skip > 0) b.skip--;
      else {
        // The call has reached the backend: it is carried out once the gate
        // opens, whether or not its caller is still waiting.
        b.gate.reach();
        const done = b.gate.released.then(fn);
        return abortable(done, signal);
      }
    }
    await Promise.resolve();
    if (signal?.aborted) throw signal.reason;
    return fn();
  }

  // ---- controls for the harness ----

  /** Blocks calls after the next `skip` until released. */
  blockCalls(skip: number): Gate {
    const g = createGate();
    this.blocker = { skip, gate: g };
    return {
      reached: g.reached,
      release: () => {
        if (this.blocker?.gate === g) this.blocker = undefined;
        g.release();
      },
    };
  }

  /** The next destroy of `name` stops half-way until released. */
  holdNextDelete(name: string): Gate {
    const g = createGate();
    this.deleteHolds.set(name, g);
    return { reached: g.reached, release: () => g.release() };
  }

  /** The next call answers `{}`, whatever it was asked. */
  injectMalformed(): void {
    this.malformedNext = true;
  }

  /** Accepts `token` from now on, and no other (a rotated credential). */
  acceptToken(token: string): void {
    this.token = token;
  }

  /** No more VMs than there are now. */
  exhaustCapacity(): void {
    this.capacity = this.vms.size;
  }

  /** Makes `target` answer pings `ms` later. */
  delayTarget(target: string, ms: number): void {
    this.delays.set(target, ms);
  }

  /** Makes every ping answer with `status`. */
  failPings(status: BackendError['status']): void {
    this.pingFailure = status;
  }

  /** Makes `target` (or every target, `*`) refuse connections. */
  setUnreachable(target: string): void {
    this.unreachable.add(target);
  }

  /**
   * Takes a VM back, as a cloud does a spot instance: it stops, loses its
   * addresses and stays so, marked reclaimed, until someone starts or
   * destroys it.
   */
  reclaim(name: string): void {
    const { ip: _ip, ipv6Range: _range, ...vm } = this.mustGet(name);
    this.vms.set(name, { ...vm, status: 'stopped', reclaimed: true });
  }

  /** Changes fields of a VM. */
  update(name: string, patch: Partial<VmRecord>): void {
    const vm = this.mustGet(name);
    this.vms.set(name, { ...vm, ...patch });
  }

  /** Puts a VM in place, replacing any of the same name. */
  plant(vm: VmRecord): void {
    this.vms.set(vm.name, vm);
  }

  /**
   * What the proxy of the VM named `name` answers now to a plain request
   * for `destination` (`host:port`) with this credential: 200, 407 when
   * it does not let the credential in, 403 when its destination policy
   * refuses the destination, undefined when the VM does not run. What
   * `acceptsCredential` asks.
   */
  proxyAnswer(
    name: string,
    credential: { username: string; password: string },
    destination: string,
  ): 200 | 403 | 407 | undefined {
    return proxyAnswer(this.vms.get(name), credential, destination, Date.now());
  }
}
