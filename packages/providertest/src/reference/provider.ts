import {
  abortedError,
  adoptionProblem,
  belongsTo,
  type CallOptions,
  type Clock,
  type CreateRequest,
  checkCreateRequest,
  defaultErrorFields,
  type ErrorClass,
  formatMark,
  type Instance,
  idFormat,
  type ListOptions,
  type Logger,
  listInstallation,
  notFound,
  type Operation,
  observeSeam,
  type Provider,
  type ProviderDeps,
  ProviderError,
  parseMark,
  permanent,
  Reason,
  raceAbort,
  requireOneOf,
  type State,
  silentLogger,
  systemClock,
  type TargetResult,
  toProviderError,
  transient,
} from '@proxy-op/contract';
import { KeyedLock, LockAbortedError } from '@proxy-op/keyedlock';
import { BackendError, type MemoryBackend, type MemorySeam, type VmRecord } from './backend.js';
import type { Flaw } from './flaws.js';

/** The reference provider's config block (after defaults). */
export interface MemoryConfig {
  /** Checker targets and placement zones, in order. */
  readonly zones: readonly string[];
  /** Machine type catalogue keys. */
  readonly machineTypes: readonly string[];
  /** Image catalogue keys. */
  readonly images: readonly string[];
}

/** What the reference provider is built with. */
export interface MemoryProviderDeps extends ProviderDeps {
  /** The in-memory backend to talk to. */
  readonly backend: MemoryBackend;
  /** A deliberate defect, for the conformance kit's self-test. */
  readonly flaw?: Flaw | undefined;
}

/** Provider IDs: `vms/<name>`. */
export const memoryId = idFormat(['vms', ':name'], {
  name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
});

/** The reference provider's classify table. */
export function classifyMemory(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (err instanceof BackendError) {
    switch (err.status) {
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
  return 'Transient';
}

/** Maps a backend status (and IP) to the contract's state. */
export function mapMemoryState(vm: VmRecord, flaw?: Flaw): State {
  switch (vm.status) {
    case 'defined':
      return flaw === 'never-started-is-stopped' ? 'Stopped' : 'Provisioning';
    case 'running':
      return vm.ip !== undefined || flaw === 'running-without-ip' ? 'Running' : 'Provisioning';
    case 'stopped':
      return 'Stopped';
    case 'terminated':
      return 'Terminated';
    default:
      return flaw === 'unknown-state-not-stopped' ? 'Provisioning' : 'Stopped';
  }
}

/** The reference provider: the contract kept by an in-memory backend. */
export class MemoryProvider implements Provider {
  readonly type = 'memory';
  readonly #config: MemoryConfig;
  readonly #seam: MemorySeam;
  readonly #lock = new KeyedLock<string>();
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #flaw: Flaw | undefined;
  readonly #remembered = new Map<string, { uid: string; createdAt: Date }>();
  readonly #deleting = new Set<string>();

  constructor(
    readonly name: string,
    config: MemoryConfig,
    deps: MemoryProviderDeps,
  ) {
    this.#config = config;
    this.#flaw = deps.flaw;
    this.#clock = deps.clock ?? systemClock;
    this.#log = (deps.logger ?? silentLogger).child({ provider: name });
    const raw = deps.backend.seam();
    this.#seam =
      this.#flaw === 'no-child-spans'
        ? raw
        : observeSeam(raw, {
            prefix: 'memory',
            provider: name,
            tracer: deps.tracer,
            logger: deps.logger,
            fields: (method, args) =>
              method === 'list' || typeof args[0] !== 'string' ? {} : { name: args[0] },
            errorFields: (err) =>
              err instanceof BackendError ? { status: err.status } : defaultErrorFields(err),
          });
  }

  async create(req: CreateRequest, opts: CallOptions = {}): Promise<string> {
    const signal = this.#signal(opts.signal);
    const checked = checkCreateRequest(this.#errName, req);
    if (this.#flaw === 'placement-checked-late') await this.#seam.lookup(req.name, signal);
    this.#placement(checked);
    this.#log.trace(
      this.#flaw === 'logs-cloud-init'
        ? { name: req.name, cloudInit: new TextDecoder().decode(req.cloudInit) }
        : { name: req.name, cloudInitBytes: req.cloudInit.byteLength, placement: req.placement },
      'memory create resolved',
    );
    const id = memoryId.format({ name: req.name });
    return this.#locked('create', req.name, signal, async () => {
      const existing =
        this.#flaw === 'repeat-create-duplicates'
          ? undefined
          : await this.#seam.lookup(req.name, signal);
      if (existing !== undefined) {
        const problem =
          this.#flaw === 'adopts-foreign-instances'
            ? undefined
            : adoptionProblem(parseMark(existing.metadata), checked);
        if (problem !== undefined) {
          throw permanent(
            this.#errName,
            'create',
            `an instance named ${req.name} exists and ${problem}; delete or rename it, or rename the Proxy`,
          );
        }
        if (existing.lock !== undefined) {
          throw transient(
            this.#errName,
            'create',
            `instance ${req.name} is locked (${existing.lock})`,
          );
        }
        if (existing.status !== 'running') await this.#seam.start(req.name, signal);
        this.#log.debug({ name: req.name, adopted: true }, 'memory instance ensured running');
        return id;
      }
      const createdAt = this.#clock.now();
      let vmName = req.name;
      if (
        this.#flaw === 'repeat-create-duplicates' &&
        (await this.#seam.lookup(req.name, signal))
      ) {
        vmName = `${req.name.slice(0, 50)}-dup${this.#remembered.size}`;
      }
      await this.#seam.define(
        vmName,
        formatMark({ uid: req.uid, createdAt, installation: checked.installation }),
        req.cloudInit,
        signal,
      );
      this.#remembered.set(req.name, { uid: req.uid, createdAt });
      await this.#seam.start(vmName, signal);
      return id;
    });
  }

  async get(id: string, opts: CallOptions = {}): Promise<Instance> {
    const signal = this.#signal(opts.signal);
    const name = this.#parse(id, 'get');
    try {
      if (this.#flaw === 'not-found-during-delete' && this.#deleting.has(name)) {
        throw notFound(this.#errName, 'get', `instance ${name} is being deleted`);
      }
      const vm = await this.#seam.lookup(name, signal);
      if (vm === undefined) throw notFound(this.#errName, 'get', `instance ${name} does not exist`);
      if (vm.lock !== undefined) {
        if (this.#flaw === 'not-found-while-locked') {
          throw notFound(this.#errName, 'get', `instance ${name} is locked`);
        }
        throw transient(this.#errName, 'get', `instance ${name} is locked (${vm.lock}); try again`);
      }
      const mark = parseMark(vm.metadata);
      if (mark === undefined) {
        throw notFound(this.#errName, 'get', `instance ${name} is not managed by proxy-op`);
      }
      const state = mapMemoryState(vm, this.#flaw);
      const remembered =
        this.#flaw === 'reads-mark-from-memory' ? this.#remembered.get(name) : undefined;
      const instance: Instance = {
        id,
        uid: remembered?.uid ?? mark.uid,
        createdAt: remembered?.createdAt ?? mark.createdAt,
        state,
        ip: state === 'Running' ? vm.ip : undefined,
        installation: mark.installation,
      };
      this.#log.trace({ name, state, ip: instance.ip }, 'memory instance read');
      return instance;
    } catch (err) {
      throw this.#fail('get', err, signal);
    }
  }

  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    const signal = this.#signal(opts.signal);
    const name = this.#parse(id, 'delete');
    await this.#locked('delete', name, signal, async () => {
      const vm = await this.#seam.lookup(name, signal);
      if (vm === undefined) {
        if (this.#flaw === 'delete-not-idempotent') {
          throw notFound(this.#errName, 'delete', `instance ${name} does not exist`);
        }
        return;
      }
      if (parseMark(vm.metadata) === undefined) {
        this.#log.debug({ name }, 'memory instance not managed by proxy-op; left alone');
        return;
      }
      if (vm.lock !== undefined) {
        throw transient(
          this.#errName,
          'delete',
          `instance ${name} is locked (${vm.lock}); try again`,
        );
      }
      this.#deleting.add(name);
      try {
        if (vm.status === 'running') await this.#seam.stop(name, signal);
        await this.#seam.destroy(name, signal);
      } finally {
        this.#deleting.delete(name);
      }
      this.#remembered.delete(name);
    });
  }

  async listByTag(opts: ListOptions = {}): Promise<Instance[]> {
    const signal = this.#signal(opts.signal);
    const installation = listInstallation(this.#errName, opts);
    try {
      const vms = await this.#seam.list(signal);
      const out: Instance[] = [];
      for (const vm of vms) {
        const mark = parseMark(vm.metadata);
        if (mark === undefined) continue;
        if (this.#flaw !== 'lists-other-installations' && !belongsTo(mark, installation)) continue;
        if (this.#flaw === 'list-drops-empty-uid' && mark.uid === '') continue;
        out.push({
          id: memoryId.format({ name: vm.name }),
          uid: mark.uid,
          createdAt: mark.createdAt,
          installation: mark.installation,
        });
      }
      return out;
    } catch (err) {
      throw this.#fail('list', err, signal);
    }
  }

  async check(opts: CallOptions = {}): Promise<TargetResult[]> {
    const signal = this.#flaw === 'check-ignores-signal' ? undefined : opts.signal;
    const finished: TargetResult[] = [];
    const results = await Promise.all(
      this.#config.zones.map(async (zone) => {
        const r = await this.#checkZone(zone, signal);
        finished.push(r);
        return r;
      }),
    );
    return this.#flaw === 'check-unordered' ? finished : results;
  }

  async #checkZone(zone: string, signal: AbortSignal | undefined): Promise<TargetResult> {
    const base = { target: zone, address: `memory://${zone}` };
    try {
      const { version } = await raceAbort(
        this.#seam.ping(zone, signal),
        signal,
        this.#errName,
        'check',
      );
      return {
        ...base,
        ready: true,
        reason: Reason.Reachable,
        message: 'answered',
        details: { version },
      };
    } catch (err) {
      if (signal?.aborted) {
        return {
          ...base,
          ready: false,
          reason: Reason.Timeout,
          message: 'check ran out of time',
          details: {},
        };
      }
      const status = err instanceof BackendError ? err.status : undefined;
      const reason =
        status === 'UNREACHABLE'
          ? Reason.Unreachable
          : status === 'UNAUTHORIZED'
            ? Reason.Unauthorized
            : status === 'FORBIDDEN'
              ? Reason.Forbidden
              : Reason.APIError;
      const message =
        this.#flaw === 'leaks-credential' && err instanceof Error
          ? err.message
          : `backend answered ${status ?? 'with an unexpected failure'}`;
      return { ...base, ready: false, reason, message, details: {} };
    }
  }

  get #errName(): string {
    return this.#flaw === 'wrong-provider-name' ? this.type : this.name;
  }

  #signal(signal: AbortSignal | undefined): AbortSignal | undefined {
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError('opts.signal must be an AbortSignal');
    }
    return this.#flaw === 'ignores-signal' ? undefined : signal;
  }

  #parse(id: string, op: 'get' | 'delete'): string {
    if (this.#flaw === 'lax-id-parsing') return String(id).split('/').pop() ?? '';
    return memoryId.mustParse(id, this.#errName, op).name;
  }

  #placement(req: CreateRequest): void {
    const { zones, machineTypes, images } = this.#config;
    const p = req.placement;
    if (zones.length > 1 || (p.zone !== undefined && p.zone !== '')) {
      requireOneOf(this.#errName, 'placement.zone', p.zone, zones, 'memory.zones');
    }
    requireOneOf(
      this.#errName,
      'placement.machineType',
      p.machineType,
      machineTypes,
      'memory.machineTypes',
    );
    requireOneOf(this.#errName, 'placement.image', p.image, images, 'memory.images');
  }

  async #locked<T>(
    op: Operation,
    name: string,
    signal: AbortSignal | undefined,
    fn: () => Promise<T>,
  ): Promise<T> {
    try {
      return await this.#lock.run(name, fn, { signal });
    } catch (err) {
      throw this.#fail(op, err, signal);
    }
  }

  #fail(op: Operation, err: unknown, signal: AbortSignal | undefined): unknown {
    if (err instanceof TypeError) return err;
    if (signal?.aborted && (LockAbortedError.isInstance(err) || !ProviderError.isInstance(err))) {
      return abortedError(this.#errName, op, signal);
    }
    if (err instanceof BackendError) {
      const message =
        this.#flaw === 'leaks-credential'
          ? err.message
          : `memory backend answered ${err.status} during ${op}`;
      return toProviderError(
        this.#errName,
        op,
        new SafeBackendError(err.status, message),
        classifyMemory,
      );
    }
    return toProviderError(this.#errName, op, err, classifyMemory);
  }
}

/** A backend failure with the body left out (it may echo credentials). */
class SafeBackendError extends BackendError {
  constructor(status: BackendError['status'], message: string) {
    super(status, '');
    this.message = message;
  }
}
