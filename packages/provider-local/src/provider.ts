/**
 * The `local` provider: each instance is a detached proxy process on its
 * own loopback address, with its state file (marks, address, pid) in the
 * state folder.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  abortedError,
  adoptionProblem,
  belongsTo,
  type CallOptions,
  type CheckedCreateRequest,
  type Clock,
  type CreateRequest,
  checkCreateRequest,
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
  sleep,
  systemClock,
  type TargetResult,
  throwIfAborted,
  toProviderError,
  transient,
} from '@proxy-op/contract';
import { KeyedLock, LockAbortedError } from '@proxy-op/keyedlock';
import { loopbackHosts } from './cidr.js';
import { classifyLocal } from './classify.js';
import type { LocalConfig } from './config.js';
import {
  createProcessSeam,
  type InstanceRecord,
  LocalError,
  type LocalSeam,
  statePath,
} from './seam.js';
import { allowedSourcesFromCloudInit } from './sources.js';

/** What the `local` provider is built with. */
export interface LocalProviderDeps extends ProviderDeps {
  /**
   * The backend calls to use instead of the real files and processes
   * (tests wrap the production seam from `createProcessSeam`). The provider
   * decorates it with `observeSeam` itself.
   */
  readonly seam?: LocalSeam | undefined;
}

/** Provider IDs: `processes/<name>`. */
export const localId = idFormat(['processes', ':name'], {
  name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
});

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

/** The `local` provider. Build it with `createProvider(providerModule, name, config)`. */
export class LocalProvider implements Provider {
  /** The provider type. */
  readonly type = 'local';
  readonly #config: LocalConfig;
  readonly #seam: LocalSeam;
  readonly #lock = new KeyedLock<string>();
  readonly #log: Logger;
  readonly #clock: Clock;

  constructor(
    readonly name: string,
    config: LocalConfig,
    deps: LocalProviderDeps = {},
  ) {
    this.#config = config;
    this.#clock = deps.clock ?? systemClock;
    this.#log = (deps.logger ?? silentLogger).child({ provider: name });
    this.#seam = observeSeam(deps.seam ?? createProcessSeam(config), {
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

  /** Idempotent; adopts by UID; resolves with `processes/<name>` once the proxy answers. */
  async create(req: CreateRequest, opts: CallOptions = {}): Promise<string> {
    const signal = checkSignal(opts.signal);
    const checked = checkCreateRequest(this.name, req);
    this.#placement(checked);
    const allowedSources = allowedSourcesFromCloudInit(req.cloudInit);
    this.#log.trace(
      { name: req.name, port: req.port, cloudInitBytes: req.cloudInit.byteLength, allowedSources },
      'local create resolved',
    );
    const id = localId.format({ name: req.name });
    return this.#locked('create', req.name, signal, async () => {
      const existing = await this.#seam.readState(req.name, signal);
      if (existing !== undefined) {
        const problem = adoptionProblem(parseMark(existing.marks), checked);
        if (problem !== undefined) {
          throw permanent(
            this.name,
            'create',
            `an instance named ${req.name} exists in ${this.#config.stateDir} and ${problem}; delete it or rename the Proxy`,
          );
        }
        await this.#ensureRunning(existing, signal);
        this.#log.debug({ name: req.name, adopted: true }, 'local instance ensured running');
        return id;
      }
      const record = await this.#allocate(
        checked,
        allowedSources.length > 0 ? allowedSources : this.#config.allowedSources,
        signal,
      );
      await this.#ensureRunning(record, signal);
      return id;
    });
  }

  /** Reads the state file and the process; NotFound when the file or its mark is gone. */
  async get(id: string, opts: CallOptions = {}): Promise<Instance> {
    const signal = checkSignal(opts.signal);
    const name = localId.mustParse(id, this.name, 'get').name;
    throwIfAborted(signal, this.name, 'get');
    try {
      const rec = await this.#seam.readState(name, signal);
      if (rec === undefined) throw notFound(this.name, 'get', `instance ${name} does not exist`);
      const mark = parseMark(rec.marks);
      if (mark === undefined) {
        throw notFound(this.name, 'get', `instance ${name} is not managed by proxy-op`);
      }
      let alive: boolean | undefined;
      let answers = false;
      if (rec.phase === 'running' && rec.pid !== undefined) {
        alive = await this.#seam.alive(name, rec.pid, signal);
        if (alive && rec.address !== undefined) {
          answers = await this.#seam.probe(name, rec.address, rec.port, signal);
        }
      }
      const state = mapLocalState(rec, alive, answers);
      const ip = state === 'Running' ? rec.address : undefined;
      this.#log.trace({ name, state, ip, pid: rec.pid }, 'local instance read');
      return {
        id,
        uid: mark.uid,
        createdAt: mark.createdAt,
        state,
        ip,
        installation: mark.installation,
      };
    } catch (err) {
      throw this.#fail('get', err, signal);
    }
  }

  /** Stops the process, waits for it to exit, removes its state; idempotent. */
  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    const signal = checkSignal(opts.signal);
    const name = localId.mustParse(id, this.name, 'delete').name;
    await this.#locked('delete', name, signal, async () => {
      const rec = await this.#seam.readState(name, signal);
      if (rec === undefined) return;
      if (parseMark(rec.marks) === undefined) {
        this.#log.debug({ name }, 'local instance not managed by proxy-op; left alone');
        return;
      }
      if (rec.pid !== undefined) await this.#seam.kill(name, rec.pid, signal);
      await this.#seam.removeState(name, signal);
    });
  }

  /** Every state file carrying the installation's mark (ID, UID, creation time). */
  async listByTag(opts: ListOptions = {}): Promise<Instance[]> {
    const signal = checkSignal(opts.signal);
    const installation = listInstallation(this.name, opts);
    throwIfAborted(signal, this.name, 'list');
    try {
      const out: Instance[] = [];
      for (const rec of await this.#seam.listStates(signal)) {
        const mark = parseMark(rec.marks);
        if (mark === undefined || !belongsTo(mark, installation)) continue;
        out.push({
          id: localId.format({ name: rec.name }),
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

  /** The Checker: the state folder is writable, the address range is bindable. */
  async check(opts: CallOptions = {}): Promise<TargetResult[]> {
    const signal = checkSignal(opts.signal);
    const hosts = loopbackHosts(this.#config.addressRange);
    return Promise.all([
      this.#checkTarget(
        'state-dir',
        this.#config.stateDir,
        LocalReason.StateDirNotWritable,
        signal,
        async () => {
          await this.#seam.checkStateDir(signal);
          return { path: this.#config.stateDir };
        },
      ),
      this.#checkTarget(
        'address-range',
        this.#config.addressRange,
        LocalReason.AddressNotBindable,
        signal,
        async () => {
          const first = hosts[0] as string;
          await this.#seam.bindable(first, 0, signal);
          return { addresses: hosts.length, probed: first };
        },
      ),
    ]);
  }

  async #checkTarget(
    target: string,
    address: string,
    failReason: string,
    signal: AbortSignal | undefined,
    fn: () => Promise<Record<string, string | number>>,
  ): Promise<TargetResult> {
    const base = { target, address };
    try {
      const details = await raceAbort(fn(), signal, this.name, 'check');
      return { ...base, ready: true, reason: Reason.Reachable, message: 'ok', details };
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
      const code = (err as NodeJS.ErrnoException).code;
      return {
        ...base,
        ready: false,
        reason: failReason,
        message: `${target === 'state-dir' ? 'cannot write the state folder' : 'cannot bind an address of the range'}: ${code ?? (err as Error).name}`,
        details: code === undefined ? {} : { code },
      };
    }
  }

  /** Picks a free address (stable per name and UID), writes the marked state file. */
  async #allocate(
    req: CheckedCreateRequest,
    allowedSources: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<InstanceRecord> {
    return this.#lock.run(
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
   * when its own was taken meanwhile), then waits until it answers.
   */
  async #ensureRunning(rec: InstanceRecord, signal: AbortSignal | undefined): Promise<void> {
    let current = rec;
    const running =
      rec.phase === 'running' &&
      rec.pid !== undefined &&
      (await this.#seam.alive(rec.name, rec.pid, signal));
    if (!running) {
      const free =
        current.address !== undefined &&
        (await this.#seam.bindable(current.address, current.port, signal));
      if (!free) {
        const uid = parseMark(current.marks)?.uid ?? '';
        current = await this.#lock.run(
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
      const pid = await this.#seam.spawn(current, signal);
      current = { ...current, phase: 'running', pid };
      // The pid is recorded even when the caller gives up now, so no process is ever orphaned.
      await raceAbort(this.#seam.writeState(current), signal, this.name, 'create');
    }
    await this.#waitAnswering(current, signal);
  }

  async #waitAnswering(rec: InstanceRecord, signal: AbortSignal | undefined): Promise<void> {
    const deadline = Date.now() + this.#config.timeouts.startMs;
    const { name, address, pid } = rec;
    if (address === undefined || pid === undefined) {
      throw transient(this.name, 'create', `instance ${name} has no address or process yet`);
    }
    for (;;) {
      if (await this.#seam.probe(name, address, rec.port, signal)) return;
      if (!(await this.#seam.alive(name, pid, signal))) {
        const tail = await this.#seam.logTail(name, signal);
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
      await sleep(25, signal, this.name, 'create');
    }
  }

  #placement(req: CheckedCreateRequest): void {
    const p = req.placement;
    const where = `the ${this.name} provider (type local)`;
    for (const field of ['region', 'zone'] as const) {
      const v = p[field];
      if (v !== undefined && v !== '') {
        requireOneOf(this.name, `placement.${field}`, v, [this.#config.zone], `${where} zone`);
      }
    }
    for (const field of ['machineType', 'image'] as const) {
      const v = p[field];
      if (v !== undefined && v !== '') {
        throw permanent(
          this.name,
          'create',
          `placement.${field} "${v}" means nothing to ${where}: every proxy is a local process; leave it empty`,
        );
      }
    }
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
      return abortedError(this.name, op, signal);
    }
    return toProviderError(this.name, op, err, classifyLocal);
  }
}

function checkSignal(signal: AbortSignal | undefined): AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError('opts.signal must be an AbortSignal');
  }
  return signal;
}

/** The state file of an instance, for tools that look behind the provider. */
export function localStatePath(config: Pick<LocalConfig, 'stateDir'>, id: string): string {
  return statePath(config.stateDir, localId.mustParse(id, 'local', 'get').name);
}
