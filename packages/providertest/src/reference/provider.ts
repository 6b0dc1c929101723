/**
 * The reference provider's implementation over its in-memory backend:
 * config, IDs, classify, state mapping and the four operations and the
 * Checker, written as a provider's backend logic inside the contract's
 * operation shell.
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckAnswer,
  type CheckContext,
  type CheckedCreateRequest,
  type CheckTarget,
  type Clock,
  type DeleteContext,
  defaultErrorFields,
  deletionProblem,
  type ErrorClass,
  formatMark,
  type IdParser,
  type ImplementationChecker,
  type Instance,
  idFormat,
  type Location,
  type Logger,
  type Mark,
  markedInstances,
  type Operation,
  type OperationContext,
  observeSeam,
  type ProviderDeps,
  type ProviderImplementation,
  type ProxyAuth,
  parseMark,
  Reason,
  requireOneOf,
  type ShellDeps,
  type State,
  systemClock,
} from '@proxy-op/contract';
import { BackendError, type MemoryBackend, type MemorySeam, type VmRecord } from './backend.js';

/** The reference provider's config block (after defaults). */
export interface MemoryConfig {
  /** Checker targets and placement zones, in order. */
  readonly zones: readonly string[];
  /** Machine type catalogue keys. */
  readonly machineTypes: readonly string[];
  /** Image catalogue keys. */
  readonly images: readonly string[];
}

/** What the reference provider is built with, besides the contract's dependencies. */
export interface MemoryProviderDeps extends ProviderDeps {
  /** The in-memory backend to talk to. */
  readonly backend: MemoryBackend;
  /**
   * Reads the credential, as a provider reads a mounted token file: called
   * for every backend call, so a rotated credential is picked up at once.
   */
  readonly credential: () => string;
}

/** Provider IDs: `vms/<name>`. */
export const memoryId = idFormat(['vms', ':name'], {
  name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
});

/** The parts of a reference provider ID. */
export interface MemoryId {
  /** The VM's name. */
  readonly name: string;
}

/** The name of an instance's seed volume. */
export function seedVolume(name: string): string {
  return `${name}-seed`;
}

/** The one region the in-memory backend stands in. */
export const MEMORY_REGION = 'memory-1';

/** The reference provider's classify table: backend statuses to error classes. */
export function classify(_op: Operation, err: unknown): ErrorClass {
  switch (err instanceof BackendError ? err.status : undefined) {
    case 'NO_SUCH_VM':
      return 'NotFound';
    case 'UNAUTHORIZED':
    case 'FORBIDDEN':
    case 'INVALID':
      return 'Permanent';
    case 'NO_CAPACITY':
      return 'QuotaExceeded';
    default:
      return 'Transient';
  }
}

/** Maps a backend status (and IP) to the contract's state. */
export function mapMemoryState(vm: VmRecord): State {
  // Taken back by the backend: not this proxy's failure.
  if (vm.reclaimed === true && vm.status !== 'running') return 'Preempted';
  if (vm.status === 'running' && vm.ip !== undefined) return 'Running';
  // Defined and never started, or started and still without an address.
  if (vm.status === 'running' || vm.status === 'defined') return 'Provisioning';
  // Stopped, or a state this provider has no mapping for.
  return 'Stopped';
}

/**
 * The reference provider: the backend logic of the contract over the
 * in-memory backend. The operation shell (`createProvider`) adds the
 * argument and signal checks, the per-name lock, the error funnel and the
 * Checker policy. Each step is a method of its own, so a test can build a
 * variant that breaks exactly one rule.
 */
export class MemoryImplementation implements ProviderImplementation<MemoryId> {
  /** The ID format, `vms/<name>`. */
  readonly ids: IdParser<MemoryId> = memoryId;
  /** The validated config block. */
  protected readonly config: MemoryConfig;
  /** The backend's seam, decorated with spans and debug lines. */
  protected readonly seam: MemorySeam;
  /** The logger, bound to the provider's name. */
  protected readonly log: Logger;
  /** The clock creation marks are read from. */
  protected readonly clock: Clock;

  constructor(
    /** The configured provider name. */
    protected readonly name: string,
    config: MemoryConfig,
    deps: MemoryProviderDeps & ShellDeps,
  ) {
    this.config = config;
    this.clock = deps.clock ?? systemClock;
    this.log = deps.logger.child({ provider: name });
    const credential = () => {
      const token = deps.credential();
      deps.secrets.add(token);
      return token;
    };
    this.seam = this.decorate(deps.backend.seam(credential), deps);
  }

  /** Wraps the seam with a child span and a debug line per call. */
  protected decorate(seam: MemorySeam, deps: MemoryProviderDeps & ShellDeps): MemorySeam {
    return observeSeam(seam, {
      prefix: 'memory',
      provider: this.name,
      tracer: deps.tracer,
      logger: deps.logger,
      fields: (method, args) =>
        method === 'list' || typeof args[0] !== 'string' ? {} : { name: args[0] },
      errorFields: (err) =>
        err instanceof BackendError ? { status: err.status } : defaultErrorFields(err),
    });
  }

  /** The key create, get and delete of one instance are serialised on: its name. */
  lockKey(id: MemoryId): string {
    return id.name;
  }

  /** Placement, then the existing VM (adopted or refused), or a new one: seed, define, start. */
  async create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    this.checkPlacement(req, ctx);
    this.log.trace(
      { name: req.name, cloudInitBytes: req.cloudInit.byteLength, placement: req.placement },
      'memory create resolved',
    );
    const id = memoryId.format({ name: req.name });
    const existing = await this.seam.lookup(req.name, ctx.signal);
    if (existing !== undefined) {
      await this.adopt(existing, req, ctx);
      return id;
    }
    const seed = seedVolume(req.name);
    await this.seam.putSeed(seed, req.cloudInit, ctx.signal);
    const mark = formatMark({
      uid: req.uid,
      createdAt: this.clock.now(),
      installation: req.installation,
    });
    try {
      await this.seam.define(
        req.name,
        { metadata: mark, seed, zone: this.zoneOf(req) },
        ctx.signal,
      );
    } catch (err) {
      // A refused define leaves no seed behind. (A cancelled one may still be
      // carried out; the retry adopts its VM and writes the seed again.)
      await this.seam.deleteSeed(seed, ctx.signal).catch(() => {});
      throw err;
    }
    await this.writePasswordFile(req, ctx);
    await this.writeEgressPolicy(undefined, req, ctx);
    await this.seam.start(req.name, ctx.signal);
    return id;
  }

  /**
   * Writes the request's destination policy into the VM's proxy config
   * when it differs from the one `vm` has (a new VM has the proxy's
   * defaults), before its proxy starts.
   */
  protected async writeEgressPolicy(
    vm: VmRecord | undefined,
    req: CheckedCreateRequest,
    ctx: OperationContext,
  ): Promise<void> {
    if (JSON.stringify(vm?.egress) === JSON.stringify(req.egress)) return;
    await this.seam.putEgressPolicy(req.name, req.egress, ctx.signal);
  }

  /** Writes the request's password file into the VM, before its proxy starts; nothing without `auth`. */
  protected async writePasswordFile(
    req: CheckedCreateRequest,
    ctx: OperationContext,
  ): Promise<void> {
    if (req.auth === undefined) return;
    await this.seam.putPasswordFile(req.name, req.auth.passwordFile, ctx.signal);
  }

  /** Adopts our own VM (same UID or empty, same installation) and finishes it; refuses anything else. */
  protected async adopt(
    vm: VmRecord,
    req: CheckedCreateRequest,
    ctx: OperationContext,
  ): Promise<void> {
    const problem = adoptionProblem(this.readMark(vm), req);
    if (problem !== undefined) {
      throw ctx.permanent(
        `an instance named ${req.name} exists and ${problem}; delete or rename it, or rename the Proxy`,
      );
    }
    await this.seam.putSeed(seedVolume(req.name), req.cloudInit, ctx.signal);
    await this.writePasswordFile(req, ctx);
    await this.writeEgressPolicy(vm, req, ctx);
    if (vm.status !== 'running') await this.seam.start(req.name, ctx.signal);
    this.log.debug({ name: req.name, adopted: true }, 'memory instance ensured running');
  }

  /** Zone (optional with one zone), machine type and image, each from the catalogue. */
  protected checkPlacement(req: CheckedCreateRequest, ctx: OperationContext): void {
    const { zones, machineTypes, images } = this.config;
    const p = req.placement;
    // With one zone the zone may be left out; with more, it must be named.
    if (zones.length > 1 || (p.zone !== undefined && p.zone !== '')) {
      requireOneOf(ctx.provider, 'placement.zone', p.zone, zones, 'memory.zones');
    }
    requireOneOf(
      ctx.provider,
      'placement.machineType',
      p.machineType,
      machineTypes,
      'memory.machineTypes',
    );
    requireOneOf(ctx.provider, 'placement.image', p.image, images, 'memory.images');
  }

  /** The ownership mark of a VM, read from its metadata. */
  protected readMark(vm: VmRecord): Mark | undefined {
    return parseMark(vm.metadata);
  }

  /** Reads the VM: NotFound when it is gone or unmarked, Transient while it is locked. */
  async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
    const vm = await this.seam.lookup(id.name, ctx.signal);
    if (vm === undefined) throw ctx.notFound(`instance ${id.name} does not exist`);
    const mark = this.readMark(vm);
    if (vm.lock !== undefined) {
      throw ctx.transient(`instance ${id.name} is locked (${vm.lock}); try again`);
    }
    if (mark === undefined) throw ctx.notFound(`instance ${id.name} is not managed by proxy-op`);
    const state = this.state(vm);
    const instance: Instance = {
      id: memoryId.format(id),
      uid: mark.uid,
      createdAt: mark.createdAt,
      state,
      ip: state === 'Running' ? vm.ip : undefined,
      installation: mark.installation,
      location: this.locationOf(vm),
      ...(state === 'Running' && vm.ipv6Range !== undefined ? { ipv6Range: vm.ipv6Range } : {}),
    };
    this.log.trace({ name: id.name, state, ip: instance.ip }, 'memory instance read');
    return instance;
  }

  /** The contract's state of a VM. */
  protected state(vm: VmRecord): State {
    return mapMemoryState(vm);
  }

  /** Where a VM runs: the backend's one region, in Germany, and the VM's zone. */
  protected locationOf(vm: VmRecord): Location | undefined {
    return {
      region: MEMORY_REGION,
      country: 'DE',
      ...(vm.zone === undefined ? {} : { zone: vm.zone }),
    };
  }

  /** The zone a request's VM goes to: the one named, or the only one configured. */
  protected zoneOf(req: CheckedCreateRequest): string {
    const z = req.placement.zone;
    return z !== undefined && z !== '' ? z : (this.config.zones[0] ?? '');
  }

  /** Stops and destroys our VM and deletes its seed; leaves anyone else's VM alone. */
  async delete(id: MemoryId, ctx: DeleteContext): Promise<void> {
    const vm = await this.seam.lookup(id.name, ctx.signal);
    if (vm !== undefined) {
      const problem = deletionProblem(this.readMark(vm), ctx.owner);
      if (problem !== undefined) {
        this.log.debug({ name: id.name, problem }, 'memory instance not ours; left alone');
        return;
      }
      if (vm.status === 'running') await this.seam.stop(id.name, ctx.signal);
      await this.seam.destroy(id.name, ctx.signal);
    }
    await this.seam.deleteSeed(seedVolume(id.name), ctx.signal);
  }

  /**
   * UpdateAuth (§4.20, in place): the VM's password file replaced; its
   * proxy takes the new one a moment later, without a restart. NotFound
   * when the VM is gone or unmarked.
   */
  async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext): Promise<void> {
    const vm = await this.seam.lookup(id.name, ctx.signal);
    if (vm === undefined || this.readMark(vm) === undefined) {
      throw ctx.notFound(`instance ${id.name} does not exist`);
    }
    await this.seam.putPasswordFile(id.name, auth.passwordFile, ctx.signal);
    this.log.debug({ name: id.name }, 'memory password file replaced');
  }

  /** The marked VMs of an installation. */
  async list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    const vms = await this.seam.list(ctx.signal);
    return markedInstances(
      installation,
      vms.map((vm) => ({
        id: memoryId.format({ name: vm.name }),
        mark: this.readMark(vm),
        state: this.state(vm),
        location: this.locationOf(vm),
      })),
    );
  }

  /** The Checker: one target per zone, each pinged. */
  readonly checker: ImplementationChecker = {
    targets: (): CheckTarget[] =>
      this.config.zones.map((zone) => ({ target: zone, address: `memory://${zone}` })),
    check: (target, ctx) => this.checkZone(target, ctx),
  };

  /** Pings one zone; names the reason for each failure. */
  protected async checkZone(target: CheckTarget, ctx: CheckContext): Promise<CheckAnswer> {
    try {
      const { version } = await this.seam.ping(target.target, ctx.signal);
      ctx.details.version = version;
      return { reason: Reason.Reachable, message: 'answered' };
    } catch (err) {
      const status = err instanceof BackendError ? err.status : undefined;
      const reason =
        status === 'UNREACHABLE'
          ? Reason.Unreachable
          : status === 'UNAUTHORIZED'
            ? Reason.Unauthorized
            : status === 'FORBIDDEN'
              ? Reason.Forbidden
              : Reason.APIError;
      return { reason, message: err instanceof Error ? err.message : 'check failed' };
    }
  }
}
