/**
 * The `local` provider: each instance is a detached proxy process on its
 * own loopback address, with its state file (marks, address, pid) in the
 * state folder. This is the backend logic only; `createProvider` wraps it
 * in the contract's operation shell.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  adoptionProblem,
  type CheckAnswer,
  type CheckContext,
  type CheckedCreateRequest,
  type CheckTarget,
  type Clock,
  type DeleteContext,
  deletionProblem,
  formatMark,
  type ImplementationChecker,
  type Instance,
  idFormat,
  type Logger,
  markedInstances,
  type OperationContext,
  observeSeam,
  type ProviderDeps,
  type ProviderImplementation,
  parseMark,
  Reason,
  raceAbort,
  requireOneOf,
  type ShellDeps,
  type State,
  systemClock,
} from '@proxy-op/contract';
import { KeyedLock } from '@proxy-op/keyedlock';
import { loopbackHosts } from './cidr.js';
import type { LocalConfig } from './config.js';
import {
  createProcessSeam,
  type InstanceRecord,
  LocalError,
  type LocalSeam,
  statePath,
} from './seam.js';

/** What the `local` provider is built with. */
export interface LocalProviderDeps extends ProviderDeps {
  /**
   * The backend calls to use instead of the real files and processes
   * (tests wrap the production seam from `createProcessSeam`). The provider
   * bounds and decorates it itself.
   */
  readonly seam?: LocalSeam | undefined;
}

/** Provider IDs: `processes/<name>`. */
export const localId = idFormat(['processes', ':name'], {
  name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
});

/** The parts of a `local` provider ID. */
export interface LocalId {
  readonly name: string;
}

/** The allocation lock's key (never an instance name). */
const ALLOCATE = '\0allocate';

/** The Checker's targets, in order: the state folder, then the address range. */
export const CHECK_TARGETS = ['state-dir', 'address-range'] as const;

/** The `local` provider's own Checker reasons. */
export const LocalReason = {
  /** The state folder cannot be created or written. */
  StateDirNotWritable: 'StateDirNotWritable',
  /** An address of the range cannot be bound on this machine. */
  AddressNotBindable: 'AddressNotBindable',
} as const;

/**
 * The state an instance is in, from its state file and process: Running
 * only when the process answers on its address, Stopped when it died,
 * Provisioning before it was spawned or while it starts.
 */
export function mapLocalState(
  record: InstanceRecord,
  alive: boolean | undefined,
  answers: boolean,
): State {
  switch (record.phase) {
    case 'starting':
      return 'Provisioning';
    case 'running':
      if (alive !== true) return 'Stopped';
      return answers && record.address !== undefined ? 'Running' : 'Provisioning';
    default:
      return 'Stopped';
  }
}

/** The first address to try for an instance: a stable hash of its name and UID over the range. */
export function preferredIndex(name: string, uid: string, size: number): number {
  const h = createHash('sha256').update(`${name}\0${uid}`).digest();
  return h.readUInt32BE(0) % size;
}

/**
 * Bounds every seam call by its budget (contract §4.16): state-folder and
 * process-table calls by `fileMs`, a probe by `probeMs`, a spawn by
 * `startMs`, a kill by `stopMs` plus the SIGKILL grace. A call past its
 * budget fails with `CALL_TIMEOUT` (Transient); the caller's signal still
 * ends it sooner.
 */
export function budgetedSeam(seam: LocalSeam, t: LocalConfig['timeouts']): LocalSeam {
  const budgets: Record<keyof LocalSeam, number> = {
    readState: t.fileMs,
    writeState: t.fileMs,
    removeState: t.fileMs,
    listStates: t.fileMs,
    alive: t.fileMs,
    logTail: t.fileMs,
    checkStateDir: t.fileMs,
    bindable: t.fileMs,
    probe: t.probeMs + t.fileMs,
    spawn: t.startMs,
    kill: t.stopMs + 2_000 + t.fileMs,
  };
  const out: Partial<Record<keyof LocalSeam, unknown>> = {};
  for (const method of Object.keys(budgets) as (keyof LocalSeam)[]) {
    const ms = budgets[method];
    const call = (seam[method] as (...a: unknown[]) => Promise<unknown>).bind(seam);
    out[method] = (...args: unknown[]) => {
      let timer: NodeJS.Timeout | undefined;
      const budget = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new LocalError('CALL_TIMEOUT', `${method} took longer than ${ms} ms`)),
          ms,
        );
      });
      const result = call(...args);
      result.catch(() => {});
      return Promise.race([result, budget]).finally(() => clearTimeout(timer));
    };
  }
  return out as LocalSeam;
}

/** The `local` provider's backend logic. Build it with `createProvider(providerModule, name, config)`. */
export class LocalImplementation implements ProviderImplementation<LocalId> {
  readonly ids = localId;
  readonly #config: LocalConfig;
  readonly #seam: LocalSeam;
  readonly #allocation = new KeyedLock<string>();
  /** Spawns under way, by instance name (they outlive a cancelled Create). */
  readonly #spawning = new Map<string, Promise<number>>();
  readonly #log: Logger;
  readonly #clock: Clock;

  constructor(name: string, config: LocalConfig, deps: LocalProviderDeps & ShellDeps) {
    this.#config = config;
    this.#clock = deps.clock ?? systemClock;
    this.#log = deps.logger.child({ provider: name });
    const raw = budgetedSeam(deps.seam ?? createProcessSeam(config), config.timeouts);
    this.#seam = observeSeam(raw, {
      prefix: 'local',
      provider: name,
      tracer: deps.tracer,
      logger: deps.logger,
      fields: (method, args) => {
        const first = args[0];
        if (typeof first === 'string' && method !== 'bindable') return { name: first };
        if (typeof first === 'object' && first !== null && 'name' in first) {
          return { name: String((first as { name: unknown }).name) };
        }
        return {};
      },
    });
  }

  lockKey(id: LocalId): string {
    return id.name;
  }

  /** Adopts by UID or allocates an address; resolves with `processes/<name>` once the proxy answers. */
  async create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    this.#placement(req, ctx);
    const allowedSources = req.allowedSources ?? this.#config.allowedSources;
    this.#log.trace(
      { name: req.name, port: req.port, cloudInitBytes: req.cloudInit.byteLength, allowedSources },
      'local create resolved',
    );
    const id = localId.format({ name: req.name });
    const existing = await this.#seam.readState(req.name, ctx.signal);
    if (existing !== undefined) {
      const problem = adoptionProblem(parseMark(existing.marks), req);
      if (problem !== undefined) {
        throw ctx.permanent(
          `an instance named ${req.name} exists in ${this.#config.stateDir} and ${problem}; delete it or rename the Proxy`,
        );
      }
      await this.#ensureRunning(existing, ctx);
      this.#log.debug({ name: req.name, adopted: true }, 'local instance ensured running');
      return id;
    }
    const record = await this.#allocate(req, allowedSources, ctx.signal);
    await this.#ensureRunning(record, ctx);
    return id;
  }

  /** Reads the state file and the process; NotFound when the file or its mark is gone. */
  async get(id: LocalId, ctx: OperationContext): Promise<Instance> {
    const { name } = id;
    const rec = await this.#seam.readState(name, ctx.signal);
    if (rec === undefined) throw ctx.notFound(`instance ${name} does not exist`);
    const mark = parseMark(rec.marks);
    if (mark === undefined) throw ctx.notFound(`instance ${name} is not managed by proxy-op`);
    let alive: boolean | undefined;
    let answers = false;
    if (rec.phase === 'running' && rec.pid !== undefined) {
      alive = await this.#seam.alive(name, rec.pid, ctx.signal);
      if (alive && rec.address !== undefined) {
        answers = await this.#seam.probe(name, rec.address, rec.port, ctx.signal);
      }
    }
    const state = mapLocalState(rec, alive, answers);
    const ip = state === 'Running' ? rec.address : undefined;
    this.#log.trace({ name, state, ip, pid: rec.pid }, 'local instance read');
    return {
      id: localId.format(id),
      uid: mark.uid,
      createdAt: mark.createdAt,
      state,
      ip,
      installation: mark.installation,
    };
  }

  /** Stops the process, waits for it to exit, removes its state; leaves what is not the caller's alone. */
  async delete(id: LocalId, ctx: DeleteContext): Promise<void> {
    const { name } = id;
    const rec = await this.#seam.readState(name, ctx.signal);
    if (rec === undefined) return;
    const problem = deletionProblem(parseMark(rec.marks), ctx.owner);
    if (problem !== undefined) {
      this.#log.debug({ name, problem }, 'local instance not the caller’s; left alone');
      return;
    }
    if (rec.pid !== undefined) await this.#seam.kill(name, rec.pid, ctx.signal);
    await this.#seam.removeState(name, ctx.signal);
  }

  /** Every state file carrying the installation's mark (ID, UID, creation time). */
  async list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    const records = await this.#seam.listStates(ctx.signal);
    return markedInstances(
      installation,
      records.map((rec) => ({
        id: localId.format({ name: rec.name }),
        mark: parseMark(rec.marks),
      })),
    );
  }

  /** The Checker: the state folder is writable, the address range is bindable. */
  readonly checker: ImplementationChecker = {
    targets: (): CheckTarget[] => [
      { target: 'state-dir', address: this.#config.stateDir },
      { target: 'address-range', address: this.#config.addressRange },
    ],
    check: (target, ctx) =>
      target.target === 'state-dir' ? this.#checkStateDir(ctx) : this.#checkRange(ctx),
  };

  async #checkStateDir(ctx: CheckContext): Promise<CheckAnswer> {
    ctx.details.path = this.#config.stateDir;
    try {
      await this.#seam.checkStateDir(ctx.signal);
      return { reason: Reason.Reachable, message: 'ok' };
    } catch (err) {
      return this.#checkFailure(
        err,
        LocalReason.StateDirNotWritable,
        'cannot write the state folder',
        ctx,
      );
    }
  }

  async #checkRange(ctx: CheckContext): Promise<CheckAnswer> {
    const hosts = loopbackHosts(this.#config.addressRange);
    const first = hosts[0] as string;
    ctx.details.addresses = hosts.length;
    ctx.details.probed = first;
    try {
      await this.#seam.bindable(first, 0, ctx.signal);
      return { reason: Reason.Reachable, message: 'ok' };
    } catch (err) {
      return this.#checkFailure(
        err,
        LocalReason.AddressNotBindable,
        'cannot bind an address of the range',
        ctx,
      );
    }
  }

  #checkFailure(err: unknown, reason: string, what: string, ctx: CheckContext): CheckAnswer {
    if (ctx.signal.aborted) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== undefined) ctx.details.code = code;
    return { reason, message: `${what}: ${code ?? (err as Error).name}` };
  }

  /** Picks a free address (stable per name and UID), writes the marked state file. */
  async #allocate(
    req: CheckedCreateRequest,
    allowedSources: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<InstanceRecord> {
    return this.#allocation.run(
      ALLOCATE,
      async () => {
        const record: InstanceRecord = {
          version: 1,
          name: req.name,
          marks: formatMark({
            uid: req.uid,
            createdAt: this.#clock.now(),
            installation: req.installation,
          }),
          address: await this.#pickAddress(req.name, req.uid, req.port, signal),
          port: req.port,
          allowedSources,
          accessLog: join(this.#config.stateDir, `${req.name}.access.log`),
          limits: this.#config.limits,
          phase: 'starting',
        };
        await this.#seam.writeState(record, signal);
        return record;
      },
      { signal },
    );
  }

  /**
   * The first address of the range, from the hash of name and UID onwards,
   * that no other state file holds and where `port` can be bound. Called
   * under the allocation lock.
   */
  async #pickAddress(
    name: string,
    uid: string,
    port: number,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const hosts = loopbackHosts(this.#config.addressRange);
    const taken = new Set(
      (await this.#seam.listStates(signal))
        .filter((r) => r.name !== name)
        .map((r) => r.address)
        .filter((a) => a !== undefined),
    );
    const start = preferredIndex(name, uid, hosts.length);
    for (let i = 0; i < hosts.length; i++) {
      const address = hosts[(start + i) % hosts.length] as string;
      if (taken.has(address)) continue;
      if (await this.#seam.bindable(address, port, signal)) return address;
    }
    throw new LocalError(
      'ADDRESS_RANGE_EXHAUSTED',
      `no address of ${this.#config.addressRange} is free on port ${port}`,
    );
  }

  /**
   * Spawns the proxy unless its process runs (moving it to another address
   * when its own was taken meanwhile), then waits until it answers. The
   * seam records the pid as part of the spawn, so no process runs
   * unrecorded whatever happens to this call.
   */
  async #ensureRunning(rec: InstanceRecord, ctx: OperationContext): Promise<void> {
    const { signal } = ctx;
    let current = rec;
    const pending = this.#spawning.get(rec.name);
    if (pending !== undefined) {
      // A spawn of an earlier, cancelled attempt is still under way: let it land (it records
      // its pid), then decide from what the state file says.
      await raceAbort(
        pending.catch(() => undefined),
        signal,
        ctx.provider,
        ctx.op,
      );
      current = (await this.#seam.readState(rec.name, signal)) ?? rec;
    }
    const running =
      current.phase === 'running' &&
      current.pid !== undefined &&
      (await this.#seam.alive(current.name, current.pid, signal));
    if (!running) {
      const free =
        current.address !== undefined &&
        (await this.#seam.bindable(current.address, current.port, signal));
      if (!free) {
        const uid = parseMark(current.marks)?.uid ?? '';
        current = await this.#allocation.run(
          ALLOCATE,
          async () => {
            const address = await this.#pickAddress(current.name, uid, current.port, signal);
            const moved: InstanceRecord = {
              ...current,
              address,
              phase: 'starting',
              pid: undefined,
            };
            await this.#seam.writeState(moved, signal);
            return moved;
          },
          { signal },
        );
      } else if (current.phase !== 'starting') {
        current = { ...current, phase: 'starting', pid: undefined };
        await this.#seam.writeState(current, signal);
      }
      // The spawn is not cancelled: it records the pid whatever happens to this call, and a
      // retry waits for it rather than start a second process for the same instance.
      const spawning = this.#seam.spawn(current);
      this.#spawning.set(current.name, spawning);
      const forget = () => {
        if (this.#spawning.get(rec.name) === spawning) this.#spawning.delete(rec.name);
      };
      spawning.then(forget, forget);
      const pid = await raceAbort(spawning, signal, ctx.provider, ctx.op);
      current = { ...current, phase: 'running', pid };
    }
    await this.#waitAnswering(current, ctx);
  }

  async #waitAnswering(rec: InstanceRecord, ctx: OperationContext): Promise<void> {
    const deadline = Date.now() + this.#config.timeouts.startMs;
    const { name, address, pid } = rec;
    if (address === undefined || pid === undefined) {
      throw ctx.transient(`instance ${name} has no address or process yet`);
    }
    for (;;) {
      if (await this.#seam.probe(name, address, rec.port, ctx.signal)) return;
      if (!(await this.#seam.alive(name, pid, ctx.signal))) {
        const tail = await this.#seam.logTail(name, ctx.signal);
        throw new LocalError(
          'START_FAILED',
          `the proxy process of ${name} exited while starting${tail === '' ? '' : `: ${tail}`}`,
        );
      }
      if (Date.now() >= deadline) {
        throw new LocalError(
          'START_TIMEOUT',
          `the proxy of ${name} did not answer on ${address}:${rec.port} within ${this.#config.timeouts.startMs} ms`,
        );
      }
      await ctx.sleep(25);
    }
  }

  #placement(req: CheckedCreateRequest, ctx: OperationContext): void {
    const p = req.placement;
    const where = `the ${ctx.provider} provider (type local)`;
    for (const field of ['region', 'zone'] as const) {
      const v = p[field];
      if (v !== undefined && v !== '') {
        requireOneOf(ctx.provider, `placement.${field}`, v, [this.#config.zone], `${where} zone`);
      }
    }
    for (const field of ['machineType', 'image'] as const) {
      const v = p[field];
      if (v !== undefined && v !== '') {
        throw ctx.permanent(
          `placement.${field} "${v}" means nothing to ${where}: every proxy is a local process; leave it empty`,
        );
      }
    }
  }
}

/** The state file of an instance, for tools that look behind the provider. */
export function localStatePath(config: Pick<LocalConfig, 'stateDir'>, id: string): string {
  const parts = localId.parse(id);
  if (parts === undefined) throw new TypeError(`not a local provider ID: ${id}`);
  return statePath(config.stateDir, parts.name);
}
